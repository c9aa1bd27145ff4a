//! Where the tokens live between runs: in memory only (the default), or in a file the user
//! names, readable by them alone (mode 0600). What is kept says which authorization server
//! and resource the tokens are for, and the client registered there (for the refresh).

use super::registration::Registered;
use super::token::Tokens;
use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

/// Where an [`Authorizer`](super::Authorizer) keeps its tokens.
#[derive(Debug, Clone, Default)]
pub enum TokenStore {
    /// In memory: gone when the program ends.
    #[default]
    Memory,
    /// In this file (JSON, mode 0600), read when the authorizer is made.
    File(PathBuf),
}

/// The tokens of one authorization and what they belong to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Saved {
    /// The authorization server that issued them.
    pub(crate) issuer: String,
    /// The resource they are for.
    pub(crate) resource: String,
    /// The client as that server knows it.
    pub(crate) client: Registered,
    pub(crate) tokens: Tokens,
}

impl TokenStore {
    /// What the file holds, if it holds anything readable.
    pub(crate) fn load(&self) -> Option<Saved> {
        match self {
            TokenStore::Memory => None,
            TokenStore::File(path) => serde_json::from_slice(&std::fs::read(path).ok()?).ok(),
        }
    }

    /// Writes `saved` to the file (nothing for memory).
    pub(crate) fn save(&self, saved: &Saved) -> Result<(), Error> {
        let TokenStore::File(path) = self else { return Ok(()) };
        let failed = |e: std::io::Error| Error::Invalid(format!("the token file {}: {e}", path.display()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(failed)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
        let json = serde_json::to_vec_pretty(saved).map_err(|e| Error::Invalid(format!("the tokens: {e}")))?;
        file.write_all(&json).map_err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::registration::AuthMethod;

    #[test]
    fn a_file_keeps_the_tokens_for_its_owner_alone() {
        let dir = std::env::temp_dir().join(format!("duet-client-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = TokenStore::File(dir.join("tokens.json"));
        assert!(store.load().is_none());
        let saved = Saved {
            issuer: "https://as".into(),
            resource: "https://h/mcp".into(),
            client: Registered { client_id: "c".into(), client_secret: None, method: AuthMethod::None },
            tokens: Tokens {
                access_token: "a".into(),
                token_type: None,
                refresh_token: Some("r".into()),
                scope: None,
                expires_at: None,
            },
        };
        store.save(&saved).unwrap();
        let mode = std::fs::metadata(dir.join("tokens.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(store.load().unwrap().tokens.refresh_token.as_deref(), Some("r"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
