//! `--fixtures`: duet's built-in registries, for its tests and its benchmark. Only a build
//! with the `fixtures` feature has the option, and the library's fixtures with it
//! (`docs/features.md`); a release build serves what its user names.

use clap::ValueEnum;
use duet::backplane::Backplane;
use duet::fixtures;
use duet::layer::Layer;
use std::sync::Arc;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fixtures {
    Testkit,
    Conformance,
    /// `echo` and 200 numbered tools, for the benchmark harness.
    Bench,
}

impl Fixtures {
    /// The registry, with what it keeps for replicas (the test registry's idempotency keys)
    /// in `backplane`.
    pub(crate) fn registry(self, backplane: &Backplane) -> Arc<dyn Layer> {
        match self {
            Fixtures::Testkit => Arc::new(fixtures::testkit::registry_on(backplane.keys.clone())),
            Fixtures::Conformance => Arc::new(fixtures::conformance::registry()),
            Fixtures::Bench => Arc::new(fixtures::bench::registry()),
        }
    }
}
