#!/usr/bin/env bash
# Runs the interop tests under tests/interop/ with the official Python SDK client (see
# python-venv.sh). The tests start `duet` themselves and stop it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$("$root/scripts/python-venv.sh")
export DUET_BIN=${DUET_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/duet}
cd "$root/tests/interop"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider --timeout 120 "$@"
