//! `private_key_jwt` (RFC 7523 §2.2): the client proves who it is at the token endpoint with
//! a short-lived JWT signed by its private key, whose audience is the authorization
//! server's issuer.

use super::pkce::random;
use crate::error::Error;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// How long an assertion is valid, in seconds.
const LIFETIME: u64 = 300;

/// The `client_assertion_type` of a JWT assertion.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A client's private key and the algorithm it signs with.
#[derive(Clone)]
pub struct SigningKey {
    key: EncodingKey,
    algorithm: Algorithm,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("algorithm", &self.algorithm).finish_non_exhaustive()
    }
}

impl SigningKey {
    /// The PEM (PKCS#8) private key `pem`, signing with JWS algorithm `algorithm` (`ES256`,
    /// `RS256`, `EdDSA`...).
    pub fn from_pem(pem: &[u8], algorithm: &str) -> Result<SigningKey, Error> {
        let algorithm = Algorithm::from_str(algorithm)
            .map_err(|e| Error::Invalid(format!("the signing algorithm {algorithm:?}: {e}")))?;
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                return Err(Error::Invalid(format!("{algorithm:?} is no private-key algorithm")));
            }
            _ => EncodingKey::from_rsa_pem(pem),
        }
        .map_err(|e| Error::Invalid(format!("the private key: {e}")))?;
        Ok(SigningKey { key, algorithm })
    }

    /// A fresh assertion that the client is `client_id`, for the authorization server `issuer`.
    pub(crate) fn assertion(&self, client_id: &str, issuer: &str) -> Result<String, Error> {
        #[derive(Serialize)]
        struct Claims<'a> {
            iss: &'a str,
            sub: &'a str,
            aud: &'a str,
            jti: String,
            iat: u64,
            exp: u64,
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or_default();
        let claims =
            Claims { iss: client_id, sub: client_id, aud: issuer, jti: random(), iat: now, exp: now + LIFETIME };
        jsonwebtoken::encode(&Header::new(self.algorithm), &claims, &self.key)
            .map_err(|e| Error::Authorization(format!("signing the client assertion: {e}")))
    }
}
