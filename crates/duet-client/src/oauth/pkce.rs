//! Proof Key for Code Exchange (RFC 7636) with the S256 method, and the random values an
//! authorization request carries (its verifier, its `state`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// One authorization request's PKCE pair.
#[derive(Debug)]
pub(crate) struct Pkce {
    /// The secret sent with the token request.
    pub(crate) verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent with the authorization request.
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh pair: a verifier of 43 characters (32 random bytes).
    pub(crate) fn new() -> Pkce {
        Pkce::of(random())
    }

    /// The pair of `verifier`.
    fn of(verifier: String) -> Pkce {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Pkce { verifier, challenge }
    }
}

/// 32 random bytes, base64url: a verifier, a `state`, a JWT's `jti`.
pub(crate) fn random() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s_example() {
        let pkce = Pkce::of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".to_owned());
        assert_eq!(pkce.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn verifiers_are_long_enough_and_differ() {
        let (one, two) = (Pkce::new(), Pkce::new());
        assert_eq!(one.verifier.len(), 43);
        assert_ne!(one.verifier, two.verifier);
    }
}
