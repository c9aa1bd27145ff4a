//! Listings page by page: one page as the server sent it, and every page followed through
//! `nextCursor`, bounded so that a server cannot keep a client listing forever.

use crate::connection::decode;
use crate::error::Error;
use duet_wire::method::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// A list method and the member of its result that holds the items.
#[derive(Debug)]
pub(crate) struct Listing {
    pub(crate) method: Method,
    key: &'static str,
}

/// `tools/list`.
pub(crate) const TOOLS: Listing = Listing { method: Method::ToolsList, key: "tools" };
/// `resources/list`.
pub(crate) const RESOURCES: Listing = Listing { method: Method::ResourcesList, key: "resources" };
/// `resources/templates/list`.
pub(crate) const TEMPLATES: Listing = Listing { method: Method::ResourcesTemplatesList, key: "resourceTemplates" };
/// `prompts/list`.
pub(crate) const PROMPTS: Listing = Listing { method: Method::PromptsList, key: "prompts" };
/// `skills/list` (the skills extension).
pub(crate) const SKILLS: Listing = Listing { method: Method::SkillsList, key: "skills" };

impl Listing {
    /// The page a list result holds.
    pub(crate) fn page<T: DeserializeOwned>(&self, mut result: Value) -> Result<Page<T>, Error> {
        let items = result.get_mut(self.key).map(Value::take).unwrap_or_default();
        let next_cursor = match result.get("nextCursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) => Some(cursor.clone()),
            Some(other) => {
                return Err(Error::Protocol(format!("the nextCursor of {} is not a string: {other}", self.method)));
            }
        };
        Ok(Page { items: decode(self.method.clone(), items)?, next_cursor })
    }
}

/// Every page, from the first, asked with `page` until one has no next cursor; more than
/// `max_pages` pages is a protocol violation.
pub(crate) async fn all<T, F, Fut>(listing: &Listing, max_pages: usize, mut page: F) -> Result<Vec<T>, Error>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<Page<T>, Error>>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    for _ in 0..max_pages {
        let next = page(cursor).await?;
        items.extend(next.items);
        match next.next_cursor {
            None => return Ok(items),
            more => cursor = more,
        }
    }
    Err(Error::Protocol(format!("{} went on past {max_pages} pages", listing.method)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn pages_are_followed_and_bounded() {
        let numbered = |cursor: Option<String>| async move {
            let at: u32 = cursor.map_or(0, |c| c.parse().unwrap());
            let next_cursor = (at < 2).then(|| (at + 1).to_string());
            Ok(Page { items: vec![at], next_cursor })
        };
        assert_eq!(all(&TOOLS, 5, numbered).await.unwrap(), [0, 1, 2]);
        let endless = |_: Option<String>| async { Ok(Page { items: vec![0], next_cursor: Some("again".into()) }) };
        let error = all::<u32, _, _>(&TOOLS, 5, endless).await.unwrap_err();
        assert_eq!(error.to_string(), "protocol violation: tools/list went on past 5 pages");
    }

    #[test]
    fn a_cursor_that_is_no_string_is_refused() {
        let page = PROMPTS.page::<Value>(json!({"prompts": [], "nextCursor": 3}));
        assert!(matches!(page, Err(Error::Protocol(_))));
        let page = PROMPTS.page::<Value>(json!({"prompts": [{"name": "a"}]})).unwrap();
        assert_eq!((page.items.len(), page.next_cursor), (1, None));
    }
}
