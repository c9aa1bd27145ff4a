#!/usr/bin/env bash
# Runs the TypeScript SDK interop tests (tests/interop-ts/: the official SDK, pinned in its
# package-lock.json, on Node 22 from npm): its client against the duet binary, which each
# test file starts on a free loopback port and stops, and duet's client (the duet-client
# crate's `call` example, target/debug/examples/call) against the SDK's server. Arguments go
# to `node --test` (e.g. a file). The binary ($DUET_BIN, else target/debug/duet) must have
# the fixtures feature, as test.sh builds it (or cargo build -p duet-cli --features fixtures):
# the tests serve --fixtures; test.sh's `cargo build --workspace --all-targets` builds the
# example (or cargo build -p duet-client --examples).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/tests/interop-ts"
( cd "$dir" && npm ci --no-audit --no-fund --loglevel=error ) || { echo "ts-interop: npm ci failed" >&2; exit 1; }
export PATH="$dir/node_modules/.bin:$PATH"
export DUET_BIN=${DUET_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/duet}
cd "$dir"
exec node --test --test-reporter=spec "$@"
