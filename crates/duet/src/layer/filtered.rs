//! Listings filtered per principal, shared. The engine renders each listing's pages once per
//! listing `Arc`; a layer that filtered afresh on every call would make a new `Arc` each
//! time and defeat that. [`Filtered`] hands every principal who sees the same items of the
//! same listing one and the same `Arc`.

use super::Listing;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// How many filtered listings one [`Filtered`] keeps before starting over. Those of listings
/// that are gone are dropped whenever a new one is made.
const MAX_FILTERED: usize = 256;

/// Memoized filters of listings of `T`.
pub struct Filtered<T> {
    memo: Mutex<HashMap<Kept, Made<T>>>,
}

/// The source listing's address and which of its items are kept.
type Kept = (usize, Vec<bool>);
/// The source listing (its `Weak` keeps its address from being reused) and what was kept.
type Made<T> = (Weak<Vec<T>>, Listing<T>);

impl<T> Default for Filtered<T> {
    fn default() -> Self {
        Filtered { memo: Mutex::default() }
    }
}

impl<T: Clone> Filtered<T> {
    /// The items of `all` that `keep` keeps (it gets each item's position and the item):
    /// `all` itself when it keeps everything, else the listing made the first time the same
    /// items were kept.
    pub fn filter(&self, all: &Listing<T>, keep: impl Fn(usize, &T) -> bool) -> Listing<T> {
        let kept: Vec<bool> = all.iter().enumerate().map(|(i, t)| keep(i, t)).collect();
        if kept.iter().all(|k| *k) {
            return all.clone();
        }
        let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
        let key = (Arc::as_ptr(all) as usize, kept);
        if let Some((_, listing)) = memo.get(&key) {
            return listing.clone();
        }
        memo.retain(|_, (source, _)| source.strong_count() > 0);
        if memo.len() >= MAX_FILTERED {
            memo.clear();
        }
        let items = all.iter().zip(&key.1).filter(|(_, k)| **k).map(|(t, _)| t.clone());
        let listing: Listing<T> = Arc::new(items.collect());
        memo.insert(key, (Arc::downgrade(all), listing.clone()));
        listing
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

    #[test]
    fn the_filters_of_listings_that_are_gone_are_dropped() {
        let filtered = Filtered::default();
        let kept: Listing<u32> = Arc::new(vec![1, 2]);
        let first = filtered.filter(&kept, |i, _| i == 0);
        for _ in 0..10 {
            let gone: Listing<u32> = Arc::new(vec![1, 2]);
            filtered.filter(&gone, |i, _| i == 0);
        }
        assert_eq!(filtered.memo.lock().unwrap().len(), 2, "the kept listing's and the last one made");
        assert!(Arc::ptr_eq(&first, &filtered.filter(&kept, |i, _| i == 0)));
    }
}
