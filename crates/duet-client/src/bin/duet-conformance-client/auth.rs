//! The authorization scenarios (`auth/…`): the client meets a protected server and gets a
//! token from the scenario's authorization server (then lists the tools and calls one, as
//! `core` does for every scenario it does not know otherwise). A
//! person's authorization is played by fetching the authorization URL and taking the
//! redirect's `Location`, as the suite's own example client does.

use crate::Run;
use duet_client::oauth::{Assertion, Authorizer, SigningKey, UserAgent};
use duet_client::{Error, HttpTransport};
use futures::future::BoxFuture;
use std::sync::Arc;

/// The client ID metadata document URL the suite's authorization servers accept.
const METADATA_DOCUMENT: &str = "https://conformance-test.local/client-metadata.json";

/// The transport of an authorization scenario: the server's URL, with the authorizer the
/// scenario calls for.
pub(crate) fn transport(run: &Run) -> Result<HttpTransport, Error> {
    let authorizer = authorizer(run)?.client_name("duet-conformance-client");
    Ok(HttpTransport::new(&run.url)?.with_authorizer(Arc::new(authorizer)))
}

/// The authorizer the scenario calls for: the client's own credentials or an assertion
/// from the context, else a person's authorization as a pre-registered client or one that
/// registers.
fn authorizer(run: &Run) -> Result<Authorizer, Error> {
    let context = |name: &str| run.context.get(name).and_then(|value| value.as_str());
    match run.scenario.as_str() {
        "auth/client-credentials-basic" => Ok(Authorizer::client_secret(
            context("client_id").unwrap_or_default(),
            context("client_secret").unwrap_or_default(),
        )),
        "auth/client-credentials-jwt" => {
            let pem = context("private_key_pem").unwrap_or_default();
            let key = SigningKey::from_pem(pem.as_bytes(), context("signing_algorithm").unwrap_or("ES256"))?;
            Ok(Authorizer::private_key_jwt(context("client_id").unwrap_or_default(), key))
        }
        "auth/wif-jwt-bearer" => Ok(Authorizer::jwt_bearer(
            context("client_id").unwrap_or_default(),
            None,
            Assertion::Given(context("valid_jwt").unwrap_or_default().to_owned()),
        )),
        "auth/enterprise-managed-authorization" => {
            let assertion = Assertion::IdJag {
                token_endpoint: context("idp_token_endpoint").unwrap_or_default().to_owned(),
                client_id: context("idp_client_id").unwrap_or_default().to_owned(),
                id_token: context("idp_id_token").unwrap_or_default().to_owned(),
            };
            Ok(Authorizer::jwt_bearer(context("client_id").unwrap_or_default(), context("client_secret"), assertion))
        }
        _ => {
            let authorizer = Authorizer::new(Arc::new(FollowRedirect::new()?)).metadata_document(METADATA_DOCUMENT);
            Ok(match context("client_id") {
                Some(client_id) => authorizer.pre_registered(client_id, context("client_secret")),
                None => authorizer,
            })
        }
    }
}

/// A user agent that authorizes at once: it GETs the authorization URL and returns the
/// `Location` it is redirected to.
#[derive(Debug)]
struct FollowRedirect {
    http: reqwest::Client,
}

impl FollowRedirect {
    fn new() -> Result<FollowRedirect, Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Transport(e.to_string()))?;
        Ok(FollowRedirect { http })
    }
}

impl UserAgent for FollowRedirect {
    fn redirect_uri(&self) -> String {
        "http://localhost:3000/callback".to_owned()
    }

    fn authorize(&self, url: String) -> BoxFuture<'_, Result<String, Error>> {
        Box::pin(async move {
            let response = self.http.get(&url).send().await.map_err(|e| Error::Transport(e.to_string()))?;
            let location = response.headers().get(reqwest::header::LOCATION).and_then(|value| value.to_str().ok());
            location.map(str::to_owned).ok_or_else(|| {
                Error::Authorization(format!("{url} redirected nowhere (HTTP status {})", response.status()))
            })
        })
    }
}
