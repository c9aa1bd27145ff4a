#!/usr/bin/env bash
# Runs the interop tests under tests/interop/ with the official Python SDK client (see
# python-venv.sh) and, for the metrics, Debian's Prometheus (pinned). The tests start `duet`
# and Prometheus themselves and stop them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$("$root/scripts/python-venv.sh")
"$root/scripts/apt-install.sh" prometheus=2.42.0+ds-5+b6
export PROMETHEUS_BIN=/usr/bin/prometheus
export DUET_BIN=${DUET_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/duet}
cd "$root/tests/interop"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider --timeout 120 "$@"
