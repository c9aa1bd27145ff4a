#!/usr/bin/env bash
# Runs every test duet has: formatting, lints, the Rust test suites (unit, engine,
# stdio and HTTP over real processes and sockets), every fuzz target briefly over its
# committed corpus (cargo-fuzz), the official MCP conformance suite for both protocol
# eras and the tasks extension (duet as the server, and duet's client in every client
# scenario), the official Python and TypeScript SDK clients against duet, duet's client
# against real servers (npm, Python and rmcp ones), the OAuth resource server against a
# real authorization server (oidc-provider), and the benchmark harness in its smoke mode
# (every case and server once, briefly; no thresholds). Installs what it needs
# (cargo-fuzz, npm, PyPI and Debian packages, pinned) on first use.
set -euo pipefail
cd "$(dirname "$0")"
# The binary the process-level tests run.
export DUET_BIN=${DUET_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/debug/duet}
# One build from scratch, not edits: incremental caches would only take disk (gigabytes).
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

step() { printf '\n==> %s (%s)\n' "$*" "$(date -u +%T)"; }

step "cargo fmt --check"
cargo fmt --all --check
cargo fmt --manifest-path fuzz/Cargo.toml --all --check

step "cargo clippy"
# The binary's `fixtures` feature: the process tests serve them (docs/features.md).
cargo clippy --workspace --all-targets --features duet-cli/fixtures -- -D warnings

step "cargo build"
cargo build --workspace --all-targets --features duet-cli/fixtures

step "the library without its default features: a stdio server with no HTTP or TLS stack"
cargo clippy -p duet --no-default-features -- -D warnings
cargo clippy -p duet --no-default-features --features http -- -D warnings
cargo clippy -p duet --features fuzzing -- -D warnings
if cargo tree -p duet --no-default-features -e normal | grep -E '\b(hyper|reqwest|rustls|aws-lc-rs|jsonwebtoken) v'; then
  echo "duet without default features must not depend on an HTTP or TLS stack" >&2
  exit 1
fi

step "the workspace crate on its own: a layer over duet without its HTTP stack"
cargo clippy -p duet-workspace --all-targets -- -D warnings
if cargo tree -p duet-workspace -e normal | grep -E '\b(hyper|reqwest|rustls|aws-lc-rs|jsonwebtoken) v'; then
  echo "duet-workspace must not depend on an HTTP or TLS stack" >&2
  exit 1
fi

step "cargo doc: the libraries' documentation, with no broken or private links"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p duet -p duet-wire -p duet-workspace -p duet-otlp -p duet-client --all-features

step "the binary as released: without its fixtures feature, no --fixtures and none of the library's fixtures"
cargo clippy -p duet-cli --all-targets -- -D warnings
if cargo tree -p duet-cli -e features -i duet | grep -F 'duet feature "fixtures"'; then
  echo "duet-cli without its fixtures feature must not build the library's fixtures" >&2
  exit 1
fi

step "Debian packages the tests run (scripts/debian-pins.sh: upstream versions, the archive's revision)"
. scripts/debian-pins.sh
./scripts/apt-install.sh "$REDIS_PIN" "$NGINX_PIN" "$PROMETHEUS_PIN" "$RIPGREP_PIN" "$FD_PIN" "$WRK_PIN"

step "cargo test"
cargo test --workspace --features duet-cli/fixtures

step "fuzzing: every target for 5 s over its committed corpus (docs/fuzzing.md)"
./scripts/fuzz.sh 5

step "conformance suite"
./scripts/conformance.sh

step "conformance suite, client side: duet-conformance-client in every client scenario"
./scripts/conformance-client.sh

step "Python SDK client interop"
./scripts/python-interop.sh

step "TypeScript SDK interop (its client: 2025-11-25's experimental tasks; its server: duet's client falls back)"
./scripts/ts-interop.sh

step "duet's client against real servers (server-everything, server-filesystem, the Python SDK, rmcp)"
./scripts/real-servers.sh

step "OAuth discovery with the Python SDK client against oidc-provider"
./scripts/oauth-tests.sh

step "benchmark harness, smoke mode (checks that it runs; no thresholds)"
./bench/run.sh --quick
# A subset of the servers: the cases none of them runs are skipped, and duet brings its
# baseline (here the same binary) with it.
subset=$(./bench/run.sh --quick --cases 2026 --servers duet-otlp,duet --baseline-bin "$DUET_BIN")
echo "$subset"
grep -q '^| duet (before) |' <<<"$subset" || { echo "bench: --servers duet left out duet's baseline" >&2; exit 1; }
./bench/run.sh --quick --replicas
./bench/run.sh --quick --workspace
