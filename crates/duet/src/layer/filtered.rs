//! Listings filtered per principal, shared. The engine renders each listing's pages once per
//! listing `Arc`; a layer that filtered afresh on every call would make a new `Arc` each
//! time and defeat that. [`Filtered`] hands every principal who sees the same items of the
//! same listing one and the same `Arc`.

use super::Listing;
use super::memo::PerListing;
use std::sync::Arc;

/// How many filtered listings one [`Filtered`] keeps before starting over. Those of listings
/// that are gone are dropped whenever a new one is made.
const MAX_FILTERED: usize = 256;

/// Memoized filters of listings of `T`, keyed by which items are kept.
pub struct Filtered<T> {
    memo: PerListing<Vec<bool>, Listing<T>>,
}

impl<T> Default for Filtered<T> {
    fn default() -> Self {
        Filtered { memo: PerListing::new(MAX_FILTERED) }
    }
}

impl<T: Clone + Send + Sync + 'static> Filtered<T> {
    /// The items of `all` that `keep` keeps (it gets each item's position and the item):
    /// `all` itself when it keeps everything, else the listing made the first time the same
    /// items were kept.
    pub fn filter(&self, all: &Listing<T>, keep: impl Fn(usize, &T) -> bool) -> Listing<T> {
        let kept: Vec<bool> = all.iter().enumerate().map(|(i, t)| keep(i, t)).collect();
        if kept.iter().all(|k| *k) {
            return all.clone();
        }
        self.memo.get_or_make(all, kept, |kept| {
            Arc::new(all.iter().zip(kept).filter(|(_, k)| **k).map(|(t, _)| t.clone()).collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_items_of_the_same_listing_are_one_listing() {
        let filtered = Filtered::default();
        let all: Listing<u32> = Arc::new(vec![1, 2, 3, 4]);
        assert!(Arc::ptr_eq(&filtered.filter(&all, |_, _| true), &all));
        let odd = filtered.filter(&all, |_, n| n % 2 == 1);
        assert_eq!(*odd, [1, 3]);
        assert!(Arc::ptr_eq(&odd, &filtered.filter(&all, |i, _| i % 2 == 0)), "same items, same listing");
        assert_eq!(*filtered.filter(&all, |_, n| *n > 2), [3, 4]);
        let changed: Listing<u32> = Arc::new(vec![1, 2, 3, 5]);
        let odd_again = filtered.filter(&changed, |_, n| n % 2 == 1);
        assert_eq!(*odd_again, [1, 3, 5]);
        assert!(!Arc::ptr_eq(&odd, &odd_again), "a new source listing makes new filtered listings");
    }
}
