//! The client's roots (MCP `roots/list`): the directories a handshake-era client says it
//! works in, as a handler reads them from its request ([`RequestCx::client_roots`]). The
//! engine asks for them when [`ServerOptions::client_roots`] is on and the client declared
//! the `roots` capability, and asks again when the client says they changed
//! (`protocol/session/state.rs`); what a layer does with them is its own business: a file server
//! serves only what lies under them.
//!
//! [`RequestCx::client_roots`]: super::RequestCx::client_roots
//! [`ServerOptions::client_roots`]: crate::protocol::ServerOptions::client_roots

use crate::file_uri::{self, FileUriError};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// One root the client listed: a `file://` URI, and a name for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRoot {
    /// The root's `file://` URI.
    pub uri: String,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ClientRoot {
    /// The local directory the root's URI names (percent-decoded; see [`file_uri::to_path`]),
    /// or why it names none here (another host, a Windows drive on another system, …).
    pub fn path(&self) -> Result<PathBuf, FileUriError> {
        file_uri::to_path(&self.uri)
    }
}

/// What a request knows of its client's roots.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ClientRoots {
    /// The client stated none: it declared no `roots` capability, the server does not ask
    /// ([`ServerOptions::client_roots`] is off), the request has no session to ask through
    /// (a 2026-07-28 or stateless request; such a handler can still ask with
    /// [`InputRequired::roots`]), or the client never answered. Serve what the program
    /// was configured with.
    ///
    /// [`ServerOptions::client_roots`]: crate::protocol::ServerOptions::client_roots
    /// [`InputRequired::roots`]: super::InputRequired::roots
    #[default]
    Unstated,
    /// The roots of the client's latest answer, in its order; possibly none, which leaves
    /// nothing in them.
    Listed(Arc<[ClientRoot]>),
}

impl ClientRoots {
    /// The listed roots; `None` when the client stated none.
    pub fn listed(&self) -> Option<&[ClientRoot]> {
        match self {
            ClientRoots::Unstated => None,
            ClientRoots::Listed(roots) => Some(roots),
        }
    }
}

/// Where a request's context gets the client's roots from: the session the request came
/// on, which may have to ask the client first.
#[async_trait]
pub(crate) trait RootsSource: Send + Sync {
    async fn client_roots(&self) -> ClientRoots;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_reads_as_sent_and_names_its_directory() {
        let root: ClientRoot =
            serde_json::from_value(serde_json::json!({"uri": "file:///home/me/My%20Project"})).unwrap();
        assert_eq!((root.name.as_deref(), root.path().unwrap()), (None, PathBuf::from("/home/me/My Project")));
        let other = ClientRoot { uri: "file://nas/share".into(), name: Some("NAS".into()) };
        assert_eq!(other.path(), Err(FileUriError::OtherHost("nas".into())));
        assert_eq!(ClientRoots::Listed(Arc::from([other.clone()])).listed(), Some(&[other][..]));
        assert_eq!(ClientRoots::Unstated.listed(), None);
    }
}
