#!/usr/bin/env bash
# Runs the interop tests under tests/interop/ with the official Python SDK client
# (PyPI `mcp` 2.3.0, exact pins from the shared constraints file) in a virtual environment
# under target/. The tests start `duet` themselves and stop it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${DUET_SHARED_DIR:-$root/../shared}
venv="$root/target/python-interop"
constraints="$shared/interop/python-mcp-2.3.0-constraints.txt"
stamp="$venv/.installed"
want="mcp==2.3.0 pytest==8.4.2 pytest-timeout==2.4.0 $(sha256sum "$constraints" | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check mcp==2.3.0 pytest==8.4.2 pytest-timeout==2.4.0 -c "$constraints"
  echo "$want" > "$stamp"
fi
export DUET_BIN=${DUET_BIN:-$root/target/debug/duet}
cd "$root/tests/interop"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider --timeout 120 "$@"
