//! A `[[resource]]` entry: fixed text written in the manifest, or a file next to it that is
//! read on each request (returned as text when it is UTF-8, as a base64 blob otherwise).

use super::locate::Place;
use super::schema::ResourceDecl;
use super::{Problem, check_roles};
use duet::layer::{HandlerError, LayerError, ResourceContents, ResourceSpec};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Checks a resource's declaration (found at `at`) and builds its spec.
pub(super) fn compile(decl: ResourceDecl, at: &Place, dir: &Path) -> Result<ResourceSpec, Problem> {
    let uri = decl.uri.clone();
    let fail = |place: Place, message: String| Problem::new(place, format!("resource {uri:?}: {message}"));
    if !valid_uri(&uri) {
        return Err(fail(at.key("uri"), "uri must be an absolute URI with a scheme, like notes://index".into()));
    }
    if decl.name.trim().is_empty() {
        return Err(fail(at.key("name"), "name is empty".into()));
    }
    check_roles(&decl.roles, at, &format!("resource {uri:?}"))?;
    let mut spec = match (decl.text, decl.file) {
        (Some(_), Some(_)) => {
            return Err(fail(at.key("file"), "give either text or file, not both".into()));
        }
        (None, None) => {
            return Err(fail(at.clone(), "give its contents: text = \"...\" or file = \"path\"".into()));
        }
        (Some(text), None) => {
            let mime = decl.mime_type.as_deref().unwrap_or("text/plain");
            ResourceSpec::text(decl.uri, decl.name, mime, text)
        }
        (None, Some(file)) => {
            let path = dir.join(&file);
            if !path.is_file() {
                return Err(fail(
                    at.key("file"),
                    format!("file {file:?} is not a readable file (relative paths start at {})", dir.display()),
                ));
            }
            let mime = decl.mime_type.or_else(|| mime_guess::from_path(&path).first_raw().map(str::to_string));
            let source = Arc::new(FileSource { path, mime: mime.clone() });
            let spec = ResourceSpec::new(decl.uri, decl.name, move |uri, _| {
                let source = source.clone();
                async move { source.read(uri).await }
            });
            match mime {
                Some(mime) => spec.mime_type(mime),
                None => spec,
            }
        }
    };
    if let Some(title) = decl.title {
        spec = spec.title(title);
    }
    if let Some(description) = decl.description {
        spec = spec.description(description);
    }
    if !decl.roles.is_empty() {
        spec = spec.roles(decl.roles);
    }
    Ok(spec)
}

/// `scheme:rest`, the scheme a letter followed by letters, digits, `+`, `-` or `.`.
fn valid_uri(uri: &str) -> bool {
    match uri.split_once(':') {
        Some((scheme, rest)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
        }
        None => false,
    }
}

/// A file served as a resource.
struct FileSource {
    path: PathBuf,
    mime: Option<String>,
}

impl FileSource {
    async fn read(&self, uri: String) -> Result<Vec<ResourceContents>, HandlerError> {
        let bytes = tokio::fs::read(&self.path).await.map_err(|e| {
            tracing::warn!(uri = %uri, path = %self.path.display(), "cannot read a manifest resource: {e}");
            let message = format!("Resource {uri} cannot be read: {}", e.kind());
            match e.kind() {
                std::io::ErrorKind::NotFound => LayerError::NotFound(message),
                _ => LayerError::Internal(message),
            }
        })?;
        let contents = match String::from_utf8(bytes) {
            Ok(text) => ResourceContents::text(uri, self.mime.as_deref().unwrap_or("text/plain"), text),
            Err(e) => {
                ResourceContents::blob(uri, self.mime.as_deref().unwrap_or("application/octet-stream"), e.as_bytes())
            }
        };
        Ok(vec![contents])
    }
}
