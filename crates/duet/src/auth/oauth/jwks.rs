//! The authorization server's signing keys (its JWKS), cached. A token signed with a key
//! the cache does not know (the server rotated its keys) triggers one refresh, but never
//! more than one per `min_refresh` however many such tokens arrive, so forged `kid`s cannot
//! turn duet into a load generator against the authorization server. Concurrent misses
//! share one fetch. Keys older than `max_age` are refreshed on use; if that fails, the old
//! keys keep working.

use super::discovery::get_json;
use crate::auth::AuthError;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use reqwest::Client;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// One verification key.
pub(crate) struct Key {
    pub kid: Option<String>,
    /// The algorithms this key may verify.
    pub algorithms: Vec<Algorithm>,
    pub key: DecodingKey,
}

#[derive(Default)]
struct KeySet {
    keys: Vec<Arc<Key>>,
    fetched: Option<Instant>,
    /// Bumped by every successful fetch.
    generation: u64,
}

struct Attempts {
    last: Option<Instant>,
}

/// The cached JWKS of one authorization server.
pub(crate) struct Jwks {
    uri: String,
    client: Client,
    keys: RwLock<Arc<KeySet>>,
    fetch: tokio::sync::Mutex<Attempts>,
    min_refresh: Duration,
    max_age: Duration,
}

const RSA: &[Algorithm] =
    &[Algorithm::RS256, Algorithm::RS384, Algorithm::RS512, Algorithm::PS256, Algorithm::PS384, Algorithm::PS512];

/// The algorithms a JWK may verify: its own `alg` if it names one, else what its key type
/// and curve allow. Symmetric keys are never used: a JWKS is public.
fn algorithms_of(jwk: &Jwk) -> Vec<Algorithm> {
    let by_type: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => RSA.to_vec(),
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => Vec::new(),
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
        _ => Vec::new(),
    };
    let named = match jwk.common.key_algorithm {
        Some(KeyAlgorithm::RS256) => Some(Algorithm::RS256),
        Some(KeyAlgorithm::RS384) => Some(Algorithm::RS384),
        Some(KeyAlgorithm::RS512) => Some(Algorithm::RS512),
        Some(KeyAlgorithm::PS256) => Some(Algorithm::PS256),
        Some(KeyAlgorithm::PS384) => Some(Algorithm::PS384),
        Some(KeyAlgorithm::PS512) => Some(Algorithm::PS512),
        Some(KeyAlgorithm::ES256) => Some(Algorithm::ES256),
        Some(KeyAlgorithm::ES384) => Some(Algorithm::ES384),
        Some(KeyAlgorithm::EdDSA) => Some(Algorithm::EdDSA),
        Some(_) => return Vec::new(),
        None => None,
    };
    match named {
        Some(alg) => by_type.into_iter().filter(|a| *a == alg).collect(),
        None => by_type,
    }
}

/// The usable signature keys of a JWKS document; others (encryption keys, unknown types)
/// are skipped.
pub(crate) fn parse_keys(document: serde_json::Value) -> Result<Vec<Arc<Key>>, String> {
    let keys = document.get("keys").and_then(|k| k.as_array()).ok_or("a JWKS needs a \"keys\" array")?;
    let mut usable = Vec::new();
    for raw in keys {
        // One key this version cannot read must not take the others down.
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else { continue };
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            continue;
        }
        let algorithms = algorithms_of(&jwk);
        if algorithms.is_empty() {
            continue;
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else { continue };
        usable.push(Arc::new(Key { kid: jwk.common.key_id.clone(), algorithms, key }));
    }
    Ok(usable)
}

impl Jwks {
    pub(super) fn new(uri: String, client: Client, min_refresh: Duration, max_age: Duration) -> Self {
        Jwks {
            uri,
            client,
            keys: RwLock::new(Arc::new(KeySet::default())),
            fetch: tokio::sync::Mutex::new(Attempts { last: None }),
            min_refresh,
            max_age,
        }
    }

    /// A set of keys given up front (tests, and programs that pin keys); never refreshed
    /// from the network unless `uri` is set.
    #[cfg(test)]
    pub(super) fn fixed(keys: Vec<Arc<Key>>) -> Self {
        let jwks = Jwks::new(String::new(), Client::new(), Duration::from_secs(3600), Duration::MAX);
        *jwks.keys.write().unwrap_or_else(|p| p.into_inner()) =
            Arc::new(KeySet { keys, fetched: Some(Instant::now()), generation: 1 });
        jwks
    }

    pub(super) fn uri(&self) -> &str {
        &self.uri
    }

    fn snapshot(&self) -> Arc<KeySet> {
        self.keys.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Fetches the keys now (at start, to fail early on a wrong URL).
    pub(super) async fn load(&self) -> Result<usize, String> {
        let mut attempts = self.fetch.lock().await;
        attempts.last = Some(Instant::now());
        let keys = self.download().await?;
        let count = keys.len();
        self.install(keys);
        Ok(count)
    }

    async fn download(&self) -> Result<Vec<Arc<Key>>, String> {
        let document = get_json(&self.client, &self.uri).await?;
        parse_keys(document).map_err(|e| format!("{}: {e}", self.uri))
    }

    fn install(&self, keys: Vec<Arc<Key>>) {
        let mut slot = self.keys.write().unwrap_or_else(|p| p.into_inner());
        let generation = slot.generation + 1;
        *slot = Arc::new(KeySet { keys, fetched: Some(Instant::now()), generation });
    }

    /// Refreshes the keys unless another task did since `seen`, or the last attempt was
    /// less than `min_refresh` ago.
    async fn refresh(&self, seen: u64) -> Result<(), AuthError> {
        let mut attempts = self.fetch.lock().await;
        if self.snapshot().generation != seen {
            return Ok(());
        }
        if attempts.last.is_some_and(|at| at.elapsed() < self.min_refresh) {
            return Ok(());
        }
        attempts.last = Some(Instant::now());
        match self.download().await {
            Ok(keys) => {
                tracing::debug!(uri = %self.uri, keys = keys.len(), "refreshed the authorization server's keys");
                self.install(keys);
                Ok(())
            }
            Err(e) => {
                tracing::warn!("cannot refresh the authorization server's keys: {e}");
                Err(AuthError::unavailable("the authorization server's signing keys are unavailable"))
            }
        }
    }

    /// The keys that may have signed a token with header `kid` and `alg`: refreshed when
    /// none is cached yet, when they are older than `max_age`, or when `kid` is unknown.
    pub(super) async fn candidates(&self, kid: Option<&str>, alg: Algorithm) -> Result<Vec<Arc<Key>>, AuthError> {
        let mut set = self.snapshot();
        let stale = set.fetched.is_none_or(|at| at.elapsed() > self.max_age);
        if stale && !self.uri.is_empty() {
            let refreshed = self.refresh(set.generation).await;
            set = self.snapshot();
            if set.fetched.is_none() {
                refreshed?;
                return Err(AuthError::unavailable("the authorization server's signing keys are unavailable"));
            }
        }
        let pick = |set: &KeySet| -> Vec<Arc<Key>> {
            set.keys
                .iter()
                .filter(|k| k.algorithms.contains(&alg))
                .filter(|k| kid.is_none() || k.kid.as_deref() == kid)
                .cloned()
                .collect()
        };
        let found = pick(&set);
        if !found.is_empty() || kid.is_none() || self.uri.is_empty() {
            return if found.is_empty() { Err(AuthError::invalid("no signing key for this token")) } else { Ok(found) };
        }
        // An unknown kid: the server may have rotated its keys.
        self.refresh(set.generation).await?;
        let found = pick(&self.snapshot());
        if found.is_empty() { Err(AuthError::invalid("unknown signing key")) } else { Ok(found) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_public_signature_keys_are_kept() {
        let doc = json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "EC", "crv": "P-256", "kid": "ec", "use": "sig",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "EC", "crv": "P-256", "kid": "enc", "use": "enc",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "whatever"}
        ]});
        let keys = parse_keys(doc).expect("a keys array");
        let kids: Vec<_> = keys.iter().map(|k| (k.kid.as_deref(), k.algorithms.clone())).collect();
        assert_eq!(kids, [(Some("ec"), vec![Algorithm::ES256]), (Some("ed"), vec![Algorithm::EdDSA])]);
        assert!(parse_keys(json!({"nokeys": []})).is_err());
    }
}
