#!/usr/bin/env bash
# Runs the interop tests under tests/interop/ with the official Python SDK client (see
# python-venv.sh), Debian's Prometheus for the metrics, Debian's ripgrep to check the
# workspace search against, and Debian's Redis and nginx for the replicas (all pinned). The
# tests start `duet`, Prometheus, Redis and nginx themselves and stop them.
# The binary ($DUET_BIN, else target/debug/duet) must have the fixtures feature, as test.sh
# builds it (or cargo build -p duet-cli --features fixtures): the tests serve --fixtures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$("$root/scripts/python-venv.sh")
. "$root/scripts/debian-pins.sh"
"$root/scripts/apt-install.sh" "$PROMETHEUS_PIN" "$RIPGREP_PIN" "$REDIS_PIN" "$NGINX_PIN"
export PROMETHEUS_BIN=/usr/bin/prometheus RG_BIN=/usr/bin/rg REDIS_BIN=/usr/bin/redis-server NGINX_BIN=/usr/sbin/nginx
export DUET_BIN=${DUET_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/duet}
cd "$root/tests/interop"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider --timeout 120 "$@"
