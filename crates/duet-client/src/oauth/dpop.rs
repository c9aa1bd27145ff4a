//! DPoP (RFC 9449): tokens bound to a key of the client's. Where the authorization server
//! takes DPoP proofs signed with ES256 and the protected server takes DPoP-bound tokens
//! (its challenge's scheme is `DPoP`, or its metadata lists DPoP algorithms), the client
//! uses a P-256 key of its own: it proves it at the token endpoint (which binds the token
//! to it) and with every request that carries the token (`Authorization: DPoP …` and a
//! fresh proof: its method, URL and the token's hash). A server that wants a nonce in the
//! proofs says so (`use_dpop_nonce` with a `DPoP-Nonce` header), the authorization
//! server's and the resource server's each kept apart.

use super::pkce::random;
use crate::error::Error;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The header that carries a proof, and the one a server's nonce comes in.
pub(crate) const DPOP: &str = "DPoP";
pub(crate) const DPOP_NONCE: &str = "DPoP-Nonce";

/// The one proof algorithm the client signs with.
pub(crate) const ALGORITHM: &str = "ES256";

/// Who asks for a nonce.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Party {
    /// The authorization server, at its token endpoint.
    AuthorizationServer,
    /// The protected server.
    ResourceServer,
}

/// The client's proof key and the nonces servers asked for.
#[derive(Debug)]
pub(crate) struct Dpop {
    key: EcdsaKeyPair,
    /// The public key, as the proofs' `jwk` header.
    jwk: Value,
    nonces: Mutex<[Option<String>; 2]>,
}

impl Dpop {
    /// A fresh key.
    pub(crate) fn new() -> Result<Dpop, Error> {
        let key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
            .map_err(|_| Error::Authorization("no DPoP key could be made".to_owned()))?;
        // An uncompressed point: 0x04, then x and y of 32 bytes each.
        let point = key.public_key().as_ref();
        let jwk = json!({
            "kty": "EC", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(Dpop { key, jwk, nonces: Mutex::new([None, None]) })
    }

    /// Keeps the nonce `party` asked for.
    pub(crate) fn set_nonce(&self, party: Party, nonce: &str) {
        self.nonces.lock().unwrap_or_else(|poisoned| poisoned.into_inner())[party as usize] = Some(nonce.to_owned());
    }

    /// A proof for a `method` request to `url` (without its query) sent to `party`,
    /// carrying `token` (its hash, `ath`) when one goes with it.
    pub(crate) fn proof(&self, party: Party, method: &str, url: &str, token: Option<&str>) -> Result<String, Error> {
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or_default();
        let mut claims = json!({"jti": random(), "htm": method, "htu": htu, "iat": now});
        if let Some(token) = token {
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
        }
        if let Some(nonce) = &self.nonces.lock().unwrap_or_else(|poisoned| poisoned.into_inner())[party as usize] {
            claims["nonce"] = json!(nonce);
        }
        let header = json!({"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk});
        let signed =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = self
            .key
            .sign(&SystemRandom::new(), signed.as_bytes())
            .map_err(|_| Error::Authorization("signing a DPoP proof failed".to_owned()))?;
        Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref())))
    }
}

/// The nonce a server's answer asks for (its `DPoP-Nonce` header).
pub(crate) fn nonce_of(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers.get(DPOP_NONCE)?.to_str().ok().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn part(jwt: &str, at: usize) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(jwt.split('.').nth(at).unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_is_signed_by_its_jwk_and_names_the_request() {
        let dpop = Dpop::new().unwrap();
        dpop.set_nonce(Party::ResourceServer, "n1");
        let proof = dpop.proof(Party::ResourceServer, "POST", "https://h/mcp?x=1", Some("tok")).unwrap();
        let (header, claims) = (part(&proof, 0), part(&proof, 1));
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(claims["htu"], "https://h/mcp");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(claims["ath"], URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")));
        let (signed, signature) = proof.rsplit_once('.').unwrap();
        let mut point = vec![4u8];
        for axis in ["x", "y"] {
            point.extend(URL_SAFE_NO_PAD.decode(header["jwk"][axis].as_str().unwrap()).unwrap());
        }
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point);
        public.verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
        let other = dpop.proof(Party::AuthorizationServer, "POST", "https://as/token", None).unwrap();
        assert_eq!(part(&other, 1).get("nonce"), None);
        assert_ne!(part(&other, 1)["jti"], claims["jti"]);
    }
}
