//! What the replicas of one server share, from the command line: the key that seals multi
//! round-trip state (`--state-key-file`, else `DUET_STATE_KEY`), so a retry may land on
//! any replica, and the store (`--store redis://…`, or `DUET_STORE`) that holds the
//! idempotency keys and carries change events between them. Replicas that share a store
//! must share a key too, so a store without one refuses to start: what they exchange
//! through it is authenticated with a key derived from it, and their default key prefix is.

use crate::cli::ReplicaArgs;
use crate::usage::Usage;
use duet::backplane::{Backplane, RedisBackplane};
use duet::state_key::{STATE_KEY_ENV, StateKeys};

/// What [`shared`] found.
pub(crate) struct Shared {
    pub state_keys: Option<StateKeys>,
    pub backplane: Backplane,
}

/// The state keys and the backplane the options name; connects to the store now, so an
/// unreachable one stops the start.
pub(crate) async fn shared(args: &ReplicaArgs) -> Result<Shared, Usage> {
    let state_keys = state_keys(args)?;
    let backplane = match (&args.store, &state_keys) {
        (None, _) => Backplane::memory(),
        (Some(_), None) => {
            return Err(Usage(format!(
                "--store shares state between replicas, which must also share a state key: set {STATE_KEY_ENV} or \
                 --state-key-file to 32 random bytes in base64 or hex (`openssl rand -base64 32`), the same for every \
                 replica"
            )));
        }
        (Some(url), Some(keys)) if url.starts_with("redis://") || url.starts_with("rediss://") => {
            let prefix = args.store_prefix.clone().unwrap_or_else(|| RedisBackplane::default_prefix(keys));
            let backplane = RedisBackplane::connect(url, &prefix, keys).await.map_err(|e| Usage(e.0))?;
            tracing::info!(store = backplane.name(), prefix, "sharing state with the other replicas");
            backplane
        }
        (Some(url), Some(_)) => {
            // Only the scheme: the rest may hold a password.
            let scheme = url.split_once("://").map_or("that", |(scheme, _)| scheme);
            return Err(Usage(format!(
                "--store takes a redis:// or rediss:// (Redis over TLS) URL, not a {scheme}:// one"
            )));
        }
    };
    Ok(Shared { state_keys, backplane })
}

fn state_keys(args: &ReplicaArgs) -> Result<Option<StateKeys>, Usage> {
    let (text, source) = match &args.state_key_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Usage(format!("cannot read --state-key-file {}: {e}", path.display())))?;
            (text, format!("--state-key-file {}", path.display()))
        }
        None => match std::env::var(STATE_KEY_ENV) {
            Ok(text) => (text, STATE_KEY_ENV.to_string()),
            Err(_) => return Ok(None),
        },
    };
    StateKeys::parse(&text).map(Some).map_err(|e| Usage(format!("{source}: {e}")))
}
