//! Rendered list pages. A listing changes only when its layer builds a new one, so each page
//! is rendered to JSON text once per listing (its `Arc`: every principal who sees the same
//! items gets the same one from the registry), version and position, and that text is
//! shared by every response that sends the page.

use super::Version;
use crate::jsonrpc::Rendered;
use crate::layer::Listing;
use serde_json::Value;
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// How many pages the cache keeps before starting over. The pages of listings that are gone
/// are dropped whenever a page is rendered.
const MAX_PAGES: usize = 1024;

#[derive(Default)]
pub(crate) struct Pages {
    pages: Mutex<HashMap<PageKey, Page>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PageKey {
    kind: &'static str,
    /// The listing's address; its entry's `Weak` keeps the address from being reused.
    listing: usize,
    version: Version,
    start: usize,
}

struct Page {
    listing: Weak<dyn Any + Send + Sync>,
    text: Rendered,
}

impl Pages {
    /// The page of `listing` at `start` for `version`, rendered by `render` the first time.
    pub fn get_or_render<T: Send + Sync + 'static>(
        &self,
        kind: &'static str,
        listing: &Listing<T>,
        version: Version,
        start: usize,
        render: impl FnOnce() -> Value,
    ) -> Rendered {
        let key = PageKey { kind, listing: Arc::as_ptr(listing) as usize, version, start };
        if let Some(page) = self.lock().get(&key) {
            return page.text.clone();
        }
        let text = Rendered::from(&render());
        let mut pages = self.lock();
        pages.retain(|_, page| page.listing.strong_count() > 0);
        if pages.len() >= MAX_PAGES {
            pages.clear();
        }
        let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(listing) as Weak<dyn Any + Send + Sync>;
        pages.insert(key, Page { listing: weak, text: text.clone() });
        text
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PageKey, Page>> {
        self.pages.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_once_per_listing_version_and_position() {
        let pages = Pages::default();
        let listing: Listing<u32> = Arc::new(vec![1, 2, 3]);
        let renders = std::cell::Cell::new(0);
        let render = |n: u32| {
            renders.set(renders.get() + 1);
            json!({"n": n})
        };
        let v = Version::V2026_07_28;
        assert_eq!(pages.get_or_render("tools", &listing, v, 0, || render(1)).as_str(), r#"{"n":1}"#);
        assert_eq!(pages.get_or_render("tools", &listing, v, 0, || render(9)).as_str(), r#"{"n":1}"#);
        assert_eq!(renders.get(), 1);
        pages.get_or_render("tools", &listing, Version::V2025_11_25, 0, || render(2));
        pages.get_or_render("tools", &listing, v, 2, || render(3));
        pages.get_or_render("prompts", &listing, v, 0, || render(4));
        let other: Listing<u32> = Arc::new(vec![1, 2, 3]);
        assert_eq!(pages.get_or_render("tools", &other, v, 0, || render(5)).as_str(), r#"{"n":5}"#);
        assert_eq!(renders.get(), 5);
    }

    #[test]
    fn the_pages_of_listings_that_are_gone_are_dropped() {
        let pages = Pages::default();
        let kept: Listing<u32> = Arc::new(vec![1]);
        pages.get_or_render("tools", &kept, Version::V2026_07_28, 0, || json!(1));
        for _ in 0..10 {
            let gone: Listing<u32> = Arc::new(vec![2]);
            pages.get_or_render("tools", &gone, Version::V2026_07_28, 0, || json!(2));
        }
        assert_eq!(pages.len(), 2, "the kept listing's page and the last one rendered");
        let again = pages.get_or_render("tools", &kept, Version::V2026_07_28, 0, || json!("rendered again"));
        assert_eq!(again.as_str(), "1");
    }

    #[test]
    fn a_full_cache_starts_over() {
        let pages = Pages::default();
        let listing: Listing<u32> = Arc::new(vec![1]);
        for start in 0..=MAX_PAGES {
            pages.get_or_render("tools", &listing, Version::V2026_07_28, start, || json!(start));
        }
        assert_eq!(pages.len(), 1);
        assert_eq!(
            pages.get_or_render("tools", &listing, Version::V2026_07_28, MAX_PAGES, || json!(0)).as_str(),
            "1024"
        );
    }
}
