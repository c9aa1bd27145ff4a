//! Which layer a command serves or inspects, and as whom: the fixtures, a manifest (given,
//! or `duet.toml` in the working directory), or a workspace of directories (the working
//! directory by default); the local user unless a role or id is given.

use crate::cli::{LayerArgs, PrincipalArgs};
use crate::manifest;
use crate::usage::Usage;
use duet::backplane::Backplane;
use duet::layer::{Layer, Principal};
use duet_workspace::{Access, Options, Workspace};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The manifest picked up from the working directory when no layer option is given.
const DEFAULT_MANIFEST: &str = "duet.toml";

/// The layer the options name, to inspect or call once.
pub(crate) fn layer(args: &LayerArgs) -> Result<Arc<dyn Layer>, Usage> {
    build(args, false, &Backplane::memory())
}

/// The layer the options name, to serve: a workspace is watched, and what the layer keeps
/// for replicas (the test fixtures' idempotency keys) lives in `backplane`.
pub(crate) fn served(args: &LayerArgs, backplane: &Backplane) -> Result<Arc<dyn Layer>, Usage> {
    build(args, true, backplane)
}

/// The manifest the options name: given, or `duet.toml` in the working directory when
/// neither fixtures nor roots are given.
fn manifest(args: &LayerArgs) -> Option<&Path> {
    #[cfg(feature = "fixtures")]
    if args.fixtures.is_some() {
        return None;
    }
    let default_manifest = Path::new(DEFAULT_MANIFEST);
    match &args.manifest {
        Some(path) => Some(path.as_path()),
        None if args.roots.is_empty() && default_manifest.is_file() => Some(default_manifest),
        None => None,
    }
}

/// The directories of the workspace the options name, if they name one (the working
/// directory by default).
pub(crate) fn workspace_roots(args: &LayerArgs) -> Option<Vec<PathBuf>> {
    #[cfg(feature = "fixtures")]
    if args.fixtures.is_some() {
        return None;
    }
    if manifest(args).is_some() {
        return None;
    }
    Some(if args.roots.is_empty() { vec![PathBuf::from(".")] } else { args.roots.clone() })
}

/// Whether the layer the options name reads the client's roots: a workspace narrows what it
/// serves to them, and the test registry shows them; no other layer reads them.
pub(crate) fn reads_client_roots(args: &LayerArgs) -> bool {
    #[cfg(feature = "fixtures")]
    if let Some(fixtures) = args.fixtures {
        return fixtures == crate::fixtures::Fixtures::Testkit;
    }
    workspace_roots(args).is_some()
}

fn build(
    args: &LayerArgs,
    watch: bool,
    #[cfg_attr(
        not(feature = "fixtures"),
        expect(unused_variables, reason = "only the test registry keeps state there")
    )]
    backplane: &Backplane,
) -> Result<Arc<dyn Layer>, Usage> {
    #[cfg(feature = "fixtures")]
    if let Some(fixtures) = args.fixtures {
        return Ok(fixtures.registry(backplane));
    }
    let manifest = manifest(args);
    if args.allow_write && manifest.is_some() {
        return Err(Usage(format!(
            "--allow-write applies to a workspace, but {DEFAULT_MANIFEST} in the working directory makes duet serve \
             that manifest; add --root . to serve the directory instead"
        )));
    }
    if let Some(path) = manifest {
        let registry = manifest::load(path).map_err(|e| Usage(e.to_string()))?;
        return Ok(Arc::new(registry));
    }
    let roots = workspace_roots(args).unwrap_or_default();
    let access = if args.allow_write { Access::ConfirmedWrites } else { Access::ReadOnly };
    let options = Options { access, follow_hard_links: args.follow_hard_links };
    let workspace = Workspace::open(roots, options).map_err(|e| Usage(e.to_string()))?;
    // Watching starts at once (the first walk, in the background, watches each directory
    // as it lists it); the server answers meanwhile.
    if watch && let Err(e) = workspace.watch() {
        tracing::warn!("{e}; serving without change notifications");
    }
    Ok(workspace)
}

pub(crate) fn principal(args: &PrincipalArgs) -> Principal {
    if args.roles.is_empty() && args.principal_id.is_none() {
        return Principal::local();
    }
    Principal::new(args.principal_id.clone().unwrap_or_else(|| "cli".into()), args.roles.iter().cloned())
}
