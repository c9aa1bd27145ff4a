//! Values made from a listing, kept as long as the listing lives. A listing is identified by
//! its `Arc`: the entry keeps a `Weak` to it, so its address is not reused while the entry
//! exists. Both the filtered listings of [`super::Filtered`] and the engine's rendered list
//! pages are kept this way.

use super::Listing;
use std::any::Any;
use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Values of type `V` made from listings, one per listing and `K`. Entries of listings that
/// are gone are dropped whenever a value is made; at `max` entries it starts over.
pub(crate) struct PerListing<K, V> {
    max: usize,
    entries: Mutex<HashMap<(usize, K), Entry<V>>>,
}

struct Entry<V> {
    listing: Weak<dyn Any + Send + Sync>,
    value: V,
}

impl<K: Eq + Hash, V: Clone> PerListing<K, V> {
    pub(crate) fn new(max: usize) -> Self {
        PerListing { max, entries: Mutex::default() }
    }

    /// The value of `listing` and `key`, made by `make` from the key the first time (outside
    /// the lock).
    pub(crate) fn get_or_make<T: Send + Sync + 'static>(
        &self,
        listing: &Listing<T>,
        key: K,
        make: impl FnOnce(&K) -> V,
    ) -> V {
        match self.get_or_try_make(listing, key, |k| Ok::<V, Infallible>(make(k))) {
            Ok(value) => value,
        }
    }

    /// Like [`PerListing::get_or_make`] with a `make` that may fail; a failure is not kept.
    pub(crate) fn get_or_try_make<T: Send + Sync + 'static, E>(
        &self,
        listing: &Listing<T>,
        key: K,
        make: impl FnOnce(&K) -> Result<V, E>,
    ) -> Result<V, E> {
        let key = (Arc::as_ptr(listing) as usize, key);
        if let Some(entry) = self.lock().get(&key) {
            return Ok(entry.value.clone());
        }
        let value = make(&key.1)?;
        let mut entries = self.lock();
        entries.retain(|_, entry| entry.listing.strong_count() > 0);
        if entries.len() >= self.max {
            entries.clear();
        }
        let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(listing) as Weak<dyn Any + Send + Sync>;
        entries.insert(key, Entry { listing: weak, value: value.clone() });
        Ok(value)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(usize, K), Entry<V>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_per_listing_and_key() {
        let memo = PerListing::new(8);
        let listing: Listing<u32> = Arc::new(vec![1]);
        assert_eq!(memo.get_or_make(&listing, 'a', |_| 1), 1);
        assert_eq!(memo.get_or_make(&listing, 'a', |_| 2), 1);
        assert_eq!(memo.get_or_make(&listing, 'b', |_| 3), 3);
        let other: Listing<u32> = Arc::new(vec![1]);
        assert_eq!(memo.get_or_make(&other, 'a', |_| 4), 4);
    }

    #[test]
    fn the_entries_of_listings_that_are_gone_are_dropped() {
        let memo = PerListing::new(1024);
        let kept: Listing<u32> = Arc::new(vec![1]);
        memo.get_or_make(&kept, (), |_| 1);
        for _ in 0..10 {
            let gone: Listing<u32> = Arc::new(vec![2]);
            memo.get_or_make(&gone, (), |_| 2);
        }
        assert_eq!(memo.len(), 2, "the kept listing's entry and the last one made");
        assert_eq!(memo.get_or_make(&kept, (), |_| 3), 1);
    }

    #[test]
    fn a_full_memo_starts_over() {
        let memo = PerListing::new(1024);
        let listing: Listing<u32> = Arc::new(vec![1]);
        for start in 0..=1024 {
            memo.get_or_make(&listing, start, |_| start);
        }
        assert_eq!(memo.len(), 1);
        assert_eq!(memo.get_or_make(&listing, 1024, |_| 0), 1024);
    }
}
