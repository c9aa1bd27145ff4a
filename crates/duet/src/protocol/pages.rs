//! Rendered list pages. A listing changes only when its layer builds a new one, so each page
//! is rendered to JSON text once per listing (its `Arc`: every principal who sees the same
//! items gets the same one from the registry), version and position, and that text is
//! shared by every response that sends the page.

use super::Version;
use crate::layer::Listing;
use crate::layer::memo::PerListing;
use duet_wire::jsonrpc::{Rendered, RpcError};

/// How many pages the cache keeps before starting over. The pages of listings that are gone
/// are dropped whenever a page is rendered.
const MAX_PAGES: usize = 1024;

pub(crate) struct Pages {
    /// By listing, kind, version and the position of the page's first item.
    pages: PerListing<(&'static str, Version, usize), Rendered>,
}

impl Default for Pages {
    fn default() -> Self {
        Pages { pages: PerListing::new(MAX_PAGES) }
    }
}

impl Pages {
    /// The page of `listing` at `start` for `version`, rendered by `render` the first time.
    pub(crate) fn get_or_render<T: Send + Sync + 'static>(
        &self,
        kind: &'static str,
        listing: &Listing<T>,
        version: Version,
        start: usize,
        render: impl FnOnce() -> Result<Rendered, RpcError>,
    ) -> Result<Rendered, RpcError> {
        self.pages.get_or_try_make(listing, (kind, version, start), |_| render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn renders_once_per_listing_version_and_position() {
        let pages = Pages::default();
        let listing: Listing<u32> = Arc::new(vec![1, 2, 3]);
        let renders = std::cell::Cell::new(0);
        let render = |n: u32| {
            renders.set(renders.get() + 1);
            Ok(Rendered::new(&json!({"n": n})).unwrap())
        };
        let text = |page: Result<Rendered, RpcError>| String::from_utf8(page.unwrap().as_bytes().to_vec()).unwrap();
        let v = Version::V2026_07_28;
        assert_eq!(text(pages.get_or_render("tools", &listing, v, 0, || render(1))), r#"{"n":1}"#);
        assert_eq!(text(pages.get_or_render("tools", &listing, v, 0, || render(9))), r#"{"n":1}"#);
        assert_eq!(renders.get(), 1);
        let _ = pages.get_or_render("tools", &listing, Version::V2025_11_25, 0, || render(2));
        let _ = pages.get_or_render("tools", &listing, v, 2, || render(3));
        let _ = pages.get_or_render("prompts", &listing, v, 0, || render(4));
        let other: Listing<u32> = Arc::new(vec![1, 2, 3]);
        assert_eq!(text(pages.get_or_render("tools", &other, v, 0, || render(5))), r#"{"n":5}"#);
        assert_eq!(renders.get(), 5);
    }
}
