//! The listings of several layers as one, shared. The engine renders each listing's pages
//! once per listing `Arc`; joining the parts' listings afresh on every call would make a new
//! `Arc` each time and defeat that. [`Joined`] hands out one joined listing while the
//! parts hand out the same listings, whoever asks.

use crate::layer::Listing;
use crate::layer::memo::PerListing;
use std::collections::HashSet;
use std::sync::{Arc, Weak};

/// How many joined listings one [`Joined`] keeps before starting over. Those whose first
/// part's listing is gone are dropped whenever a new one is made.
const MAX_JOINED: usize = 256;

/// A joined listing, and a `Weak` to each listing joined after the first: the memo knows
/// those by address, and a `Weak` keeps an address from being reused while the entry lives.
type Joint<T> = (Listing<T>, Arc<[Weak<Vec<T>>]>);

/// Memoized joins of listings of `T`, keyed by the listings joined.
pub(crate) struct Joined<T> {
    memo: PerListing<Vec<usize>, Joint<T>>,
}

impl<T> Default for Joined<T> {
    fn default() -> Self {
        Joined { memo: PerListing::new(MAX_JOINED) }
    }
}

impl<T: Clone + Send + Sync + 'static> Joined<T> {
    /// The items of `parts` in order, leaving out an item whose `key` an earlier item has
    /// (the first part wins): the one part's own listing when only one has items, else the
    /// listing made the first time the same listings were joined.
    pub(crate) fn join(&self, parts: &[Listing<T>], key: impl Fn(&T) -> &str) -> Listing<T> {
        let Some(at) = parts.iter().position(|part| !part.is_empty()) else {
            return parts.first().cloned().unwrap_or_default();
        };
        let (first, rest) = (&parts[at], &parts[at + 1..]);
        if rest.iter().all(|part| part.is_empty()) {
            return first.clone();
        }
        let addresses = rest.iter().map(|part| Arc::as_ptr(part) as usize).collect();
        let (joined, _) = self.memo.get_or_make(first, addresses, |_| {
            let mut seen = HashSet::new();
            let items = parts[at..].iter().flat_map(|part| part.iter()).filter(|item| seen.insert(key(item)));
            (Arc::new(items.cloned().collect()), rest.iter().map(Arc::downgrade).collect())
        });
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(items: &[&'static str]) -> Listing<&'static str> {
        Arc::new(items.to_vec())
    }

    #[test]
    fn the_same_listings_make_one_joined_listing() {
        let joined = Joined::default();
        let (a, b) = (listing(&["a", "b"]), listing(&["c"]));
        let first = joined.join(&[a.clone(), b.clone()], |s| s);
        assert_eq!(*first, ["a", "b", "c"]);
        assert!(Arc::ptr_eq(&first, &joined.join(&[a.clone(), b.clone()], |s| s)), "same parts, same listing");
        let changed = listing(&["c", "d"]);
        assert_eq!(*joined.join(&[a.clone(), changed], |s| s), ["a", "b", "c", "d"]);
        assert!(Arc::ptr_eq(&first, &joined.join(&[a, b], |s| s)), "the earlier parts' listing is still theirs");
    }

    #[test]
    fn one_filled_part_is_its_own_listing_and_the_first_part_wins() {
        let joined = Joined::default();
        let (empty, filled) = (listing(&[]), listing(&["a"]));
        assert!(Arc::ptr_eq(&joined.join(&[empty.clone(), filled.clone()], |s| s), &filled));
        assert!(Arc::ptr_eq(&joined.join(&[empty.clone(), empty.clone()], |s| s), &empty));
        let clash = joined.join(&[listing(&["x:1", "y:1"]), listing(&["x:2", "z:2"])], |s| &s[..1]);
        assert_eq!(*clash, ["x:1", "y:1", "z:2"]);
    }
}
