#!/usr/bin/env bash
# Makes (once) the virtual environment with the official Python SDK client — PyPI `mcp`
# 2.3.0 with the exact pins of tests/interop/python-mcp-2.3.0-constraints.txt — pytest, and
# the OpenTelemetry protocol definitions (opentelemetry-proto) the OTLP receiver decodes with,
# under target/python-interop, and prints its path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="${CARGO_TARGET_DIR:-$root/target}/python-interop"
constraints="$root/tests/interop/python-mcp-2.3.0-constraints.txt"
packages=(mcp==2.3.0 pytest==8.4.2 pytest-timeout==2.4.0 opentelemetry-proto==1.45.2)
want="${packages[*]} $(sha256sum "$constraints" | cut -c1-16)"
if [ ! -f "$venv/.installed" ] || [ "$(cat "$venv/.installed")" != "$want" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}" -c "$constraints" >&2
  echo "$want" > "$venv/.installed"
fi
echo "$venv"
