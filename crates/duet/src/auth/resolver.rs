//! Principal resolution: who a request runs as. An authenticator may vouch for a principal
//! (a bearer token's); a program's own resolver may then confirm or replace it. Roles never
//! come from anything the client says about itself (`clientInfo`).

use crate::layer::Principal;
use http::HeaderMap;
use std::sync::{Arc, LazyLock};

/// The anonymous principal, made once and shared by every request nobody vouched for.
static ANONYMOUS: LazyLock<Arc<Principal>> = LazyLock::new(|| Arc::new(Principal::anonymous()));

/// What a resolver may look at.
pub struct RequestInfo<'a> {
    /// `"stdio"`, `"http"` or `"sse"`.
    pub transport: &'static str,
    /// The HTTP request's headers (none over stdio).
    pub headers: &'a HeaderMap,
    /// The principal an authenticator vouched for, if any.
    pub principal: Option<&'a Principal>,
}

impl RequestInfo<'_> {
    /// The `Mcp-Session-Id` the request names (handshake era), if any.
    pub fn session_id(&self) -> Option<&str> {
        self.headers.get(duet_wire::headers::SESSION_ID).and_then(|h| h.to_str().ok())
    }
}

/// A program's resolver: `Some` decides, `None` falls back to the default order.
pub type PrincipalResolver = Arc<dyn Fn(&RequestInfo<'_>) -> Option<Principal> + Send + Sync>;

/// The default order: the authenticated principal, then the local user for stdio, then
/// anonymous (one principal shared by every such request).
pub(super) fn default_principal(info: &RequestInfo<'_>) -> Arc<Principal> {
    match (info.principal, info.transport) {
        (Some(p), _) => Arc::new(p.clone()),
        (None, "stdio") => Arc::new(Principal::local()),
        (None, _) => ANONYMOUS.clone(),
    }
}

/// Runs `custom` (if any) and falls back to the default order, keeping the authenticated
/// principal when the custom resolver declines.
pub(crate) fn resolve(custom: Option<&PrincipalResolver>, info: &RequestInfo<'_>) -> Arc<Principal> {
    custom.and_then(|r| r(info)).map(Arc::new).unwrap_or_else(|| default_principal(info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_keeps_the_token_principal() {
        let headers = HeaderMap::new();
        let token = Principal::new("alice", ["analyst"]);
        let info = RequestInfo { transport: "http", headers: &headers, principal: Some(&token) };
        let declines: PrincipalResolver = Arc::new(|_| None);
        assert_eq!(*resolve(Some(&declines), &info), token);
        let replaces: PrincipalResolver = Arc::new(|i| Some(Principal::new(format!("via-{}", i.transport), ["x"])));
        assert_eq!(resolve(Some(&replaces), &info).id, "via-http");
        let anon = RequestInfo { principal: None, ..info };
        assert!(Arc::ptr_eq(&resolve(None, &anon), &resolve(None, &anon)), "anonymous is shared");
        assert_eq!(*resolve(None, &anon), Principal::anonymous());
        let stdio = RequestInfo { transport: "stdio", ..anon };
        assert_eq!(*resolve(None, &stdio), Principal::local());
    }
}
