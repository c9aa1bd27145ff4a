//! What an authorization server (or identity provider) answers a POST with: a JSON
//! document on success, else a failure said with the start of its body (the OAuth `error`
//! and `error_description`, usually).

use crate::error::Error;
use serde::de::DeserializeOwned;

/// How much of a failure's body an error quotes.
const QUOTED: usize = 200;

/// The document `response` carries; a failure status, or a body that is not the document,
/// is an error that names `what` answered.
pub(crate) async fn document<T: DeserializeOwned>(response: reqwest::Response, what: &str) -> Result<T, Error> {
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        let quoted: String = body.chars().take(QUOTED).collect();
        return Err(Error::Authorization(format!("{what} answered HTTP status {status}: {quoted}")));
    }
    response.json().await.map_err(|e| Error::Authorization(format!("{what} answered no valid document: {e}")))
}
