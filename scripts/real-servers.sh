#!/usr/bin/env bash
# Runs duet's client against servers written by others (crates/duet-client/tests/real_servers.rs),
# each pinned: @modelcontextprotocol/server-everything and server-filesystem from npm
# (tests/interop-ts/package-lock.json, on its Node 22), the Python SDK `mcp` 2.3.0
# (scripts/python-venv.sh) serving crates/duet-client/tests/fixtures/python_server.py, and
# rmcp 3.11's echo server (bench/peers/rmcp-echo, its committed lock file, built where and as
# `bench/run.sh --quick` builds it, so the benchmark's smoke run reuses it). It tells the tests
# where they are through DUET_REAL_SERVERS_NODE_MODULES, DUET_REAL_SERVERS_PYTHON and
# DUET_REAL_SERVERS_RMCP_ECHO; arguments go to cargo test (e.g. a test's name).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
npm_dir="$root/tests/interop-ts"
( cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error ) || { echo "real-servers: npm ci failed" >&2; exit 1; }
venv=$("$root/scripts/python-venv.sh")
peers="${BENCH_TARGET_DIR:-$root/bench/target}/smoke"
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo build --quiet --release --locked --manifest-path "$root/bench/peers/rmcp-echo/Cargo.toml" --target-dir "$peers"
export DUET_REAL_SERVERS_NODE_MODULES="$npm_dir/node_modules"
export DUET_REAL_SERVERS_PYTHON="$venv/bin/python"
export DUET_REAL_SERVERS_RMCP_ECHO="$peers/release/rmcp-echo"
cd "$root"
exec cargo test -p duet-client --test real_servers "$@"
