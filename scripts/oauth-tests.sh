#!/usr/bin/env bash
# The OAuth discovery test with the official Python SDK client (mcp 2.3.0) against duet and
# a real authorization server (the pinned oidc-provider in tests/oauth). `cargo test` runs
# the other OAuth tests and skips this one, which needs the Python environment. The test
# starts the provider and duet on 127.0.0.1 (free ports) and stops them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
( cd "$root/tests/oauth" && npm ci --no-audit --no-fund --loglevel=error ) || { echo "oauth: npm ci failed" >&2; exit 1; }
venv=$("$root/scripts/python-venv.sh")
cd "$root"
# The whole workspace, as test.sh builds it: building one package resolves other features and
# would compile every dependency a second time.
[[ -n ${DUET_BIN:-} ]] || cargo build --workspace --bins --features duet-cli/fixtures
export DUET_BIN=${DUET_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/duet}
export DUET_OAUTH_PYTHON="$venv/bin/python"
exec cargo test --workspace --features duet-cli/fixtures --test oauth_python -- --include-ignored "$@"
