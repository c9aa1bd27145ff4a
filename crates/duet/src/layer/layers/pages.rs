//! Pages of resources of several layers, for [`Layers`](super::Layers) when one of its
//! parts pages its resources itself ([`Layer::resource_page`], a workspace's files): the
//! parts' resources are paged one part after the other, each page from one part, a part
//! that pages itself in its own pages and any other in pages of its listing. A cursor names
//! the part and where in it the page starts: `2` (its start), `2:40` (its listing from
//! the 40th resource) or `2:` and the part's own cursor.

use crate::layer::{ClientRoots, Layer, LayerError, Listing, OwnPage, RequestCx, Resource, ResourcePage};
use std::sync::Arc;

/// Where a page starts: a part, and that part's own cursor or the position in its listing
/// (`None`: its start).
struct Position<'a> {
    part: usize,
    within: Option<&'a str>,
}

/// The page of `parts` from `cursor`; `None` when no part pages itself, and the engine pages
/// the joined listing.
pub(super) async fn page(parts: &[Arc<dyn Layer>], cursor: Option<&str>, limit: usize, cx: RequestCx) -> OwnPage {
    let Some(cursor) = cursor else {
        return first_page(parts, limit, cx).await;
    };
    Some(match position(cursor, parts.len()) {
        Some(at) => page_from(parts, at, limit, cx).await,
        None => Err(LayerError::invalid_arguments("Invalid cursor")),
    })
}

/// The first page, when a part pages itself: the first part's, whose first page is made even
/// when an earlier part's listing comes first (to learn that some part pages itself).
async fn first_page(parts: &[Arc<dyn Layer>], limit: usize, cx: RequestCx) -> OwnPage {
    for (index, part) in parts.iter().enumerate() {
        let Some(made) = part.resource_page(None, limit, cx.clone()).await else {
            continue;
        };
        for (earlier, listed) in parts[..index].iter().enumerate() {
            let listed = listing(listed.as_ref(), &cx).await;
            if !listed.is_empty() {
                return Some(Ok(listed_page(parts.len(), earlier, &listed, 0, limit)));
            }
        }
        return Some(made.map(|page| continued(parts.len(), index, page)));
    }
    None
}

/// The page at `at`, passing over parts whose listing has nothing left.
async fn page_from(
    parts: &[Arc<dyn Layer>],
    mut at: Position<'_>,
    limit: usize,
    cx: RequestCx,
) -> Result<ResourcePage, LayerError> {
    loop {
        let part = &parts[at.part];
        if let Some(made) = part.resource_page(at.within, limit, cx.clone()).await {
            return made.map(|page| continued(parts.len(), at.part, page));
        }
        let start = match at.within.map(str::parse::<usize>) {
            None => 0,
            Some(Ok(start)) => start,
            Some(Err(_)) => return Err(LayerError::invalid_arguments("Invalid cursor")),
        };
        let listed = listing(part.as_ref(), &cx).await;
        if start < listed.len() || at.part + 1 == parts.len() {
            return Ok(listed_page(parts.len(), at.part, &listed, start, limit));
        }
        at = Position { part: at.part + 1, within: None };
    }
}

/// The resources `part` lists for the request, within the client's roots when it listed
/// them (as the engine lists a layer that does not page itself).
async fn listing(part: &dyn Layer, cx: &RequestCx) -> Listing<Resource> {
    match cx.client_roots().await {
        ClientRoots::Listed(roots) => part.resources_within(cx.principal(), &roots),
        ClientRoots::Unstated => part.resources(cx.principal()),
    }
}

/// At most `limit` (0: all) of `listed` from `start`, as a page of part `part` of `parts`.
fn listed_page(parts: usize, part: usize, listed: &[Resource], start: usize, limit: usize) -> ResourcePage {
    let start = start.min(listed.len());
    let end = if limit == 0 { listed.len() } else { listed.len().min(start + limit) };
    let next_cursor = if end < listed.len() { Some(format!("{part}:{end}")) } else { next_part(parts, part) };
    ResourcePage { resources: listed[start..end].to_vec(), next_cursor }
}

/// A page `part` made itself, its cursor naming the part (or the next part after its last).
fn continued(parts: usize, part: usize, mut page: ResourcePage) -> ResourcePage {
    page.next_cursor = match page.next_cursor {
        Some(own) => Some(format!("{part}:{own}")),
        None => next_part(parts, part),
    };
    page
}

/// The cursor of the start of the part after `part`, if there is one.
fn next_part(parts: usize, part: usize) -> Option<String> {
    (part + 1 < parts).then(|| (part + 1).to_string())
}

/// The position a cursor names, if it names one of `parts` parts.
fn position(cursor: &str, parts: usize) -> Option<Position<'_>> {
    let (part, within) = match cursor.split_once(':') {
        Some((part, within)) => (part, Some(within)),
        None => (cursor, None),
    };
    let part = part.parse().ok().filter(|part| *part < parts)?;
    Some(Position { part, within })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{Layers, Middleware, Principal, Registry, ResourceSpec, ServerInfo};
    use async_trait::async_trait;

    /// A registry listing `test://` and each of `names`.
    fn registry(names: &[&str]) -> Registry {
        let mut registry = Registry::new(ServerInfo::new("listed", "1"));
        for name in names {
            registry
                .resource(ResourceSpec::text(format!("test://{name}"), *name, "text/plain", "x"))
                .expect("resource");
        }
        registry
    }

    fn listing_part(uris: &[&str]) -> Arc<dyn Layer> {
        Arc::new(registry(uris))
    }

    /// A layer that pages its registry's resources itself: two, then (at its cursor `more`)
    /// the rest.
    struct Paging(Registry);

    #[async_trait]
    impl Middleware for Paging {
        fn inner(&self) -> &dyn Layer {
            &self.0
        }
        async fn resource_page(&self, cursor: Option<&str>, _limit: usize, cx: RequestCx) -> OwnPage {
            let all = self.0.resources(cx.principal());
            let (taken, next_cursor) = match cursor {
                None => (&all[..2], Some("more".to_string())),
                Some("more") => (&all[2..], None),
                Some(_) => return Some(Err(LayerError::invalid_arguments("not my cursor"))),
            };
            Some(Ok(ResourcePage { resources: taken.to_vec(), next_cursor }))
        }
    }

    fn paging_part() -> Arc<dyn Layer> {
        Arc::new(Paging(registry(&["p1", "p2", "p3"])))
    }

    /// Every page of `layers`, two resources at the most, by their names.
    async fn walk(layers: &Layers) -> Vec<(Vec<String>, Option<String>)> {
        let mut pages = Vec::new();
        let mut cursor = None;
        loop {
            let cx = RequestCx::builder(Principal::local()).build();
            let page = layers.resource_page(cursor.as_deref(), 2, cx).await.expect("paged").expect("a page");
            cursor = page.next_cursor.clone();
            pages.push((page.resources.into_iter().map(|r| r.name).collect(), page.next_cursor));
            if cursor.is_none() {
                return pages;
            }
        }
    }

    fn page(names: &[&str], next: Option<&str>) -> (Vec<String>, Option<String>) {
        (names.iter().map(|name| name.to_string()).collect(), next.map(str::to_string))
    }

    #[tokio::test]
    async fn the_parts_are_paged_one_after_the_other() {
        let layers = Layers::new(listing_part(&["r1", "r2", "r3"]))
            .with(paging_part())
            .with(listing_part(&[]))
            .with(listing_part(&["r4"]));
        let expected = [
            page(&["r1", "r2"], Some("0:2")),
            page(&["r3"], Some("1")),
            page(&["p1", "p2"], Some("1:more")),
            page(&["p3"], Some("2")),
            page(&["r4"], None),
        ];
        assert_eq!(walk(&layers).await, expected, "the empty part is passed over");
        let first = Layers::new(listing_part(&[])).with(paging_part());
        assert_eq!(walk(&first).await, [page(&["p1", "p2"], Some("1:more")), page(&["p3"], None)]);
    }

    #[tokio::test]
    async fn without_a_part_that_pages_itself_the_engine_pages_and_bad_cursors_are_refused() {
        let cx = || RequestCx::builder(Principal::local()).build();
        let listed = Layers::new(listing_part(&["r1"])).with(listing_part(&["r2"]));
        assert!(listed.resource_page(None, 2, cx()).await.is_none());
        let layers = Layers::new(listing_part(&["r1"])).with(paging_part());
        for cursor in ["2", "x", "0:x", "1:other"] {
            let refused = layers.resource_page(Some(cursor), 2, cx()).await.expect("paged").err();
            assert!(matches!(refused, Some(LayerError::InvalidArguments { .. })), "{cursor}: {refused:?}");
        }
    }
}
