#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in conformance/package-lock.json, with
# Node 22 from npm) against `duet serve --fixtures conformance --transport http` on
# 127.0.0.1 and a free port, for both requirement sets. Fails on any failure outside the
# per-check baselines conformance/baseline-<revision>.yml. Stops the server it starts.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runner="$root/conformance"
duet=${DUET_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/duet}
out=${CONFORMANCE_OUT:-${CARGO_TARGET_DIR:-$root/target}/conformance}

( cd "$runner" && npm ci --no-audit --no-fund --loglevel=error ) || { echo "conformance: npm ci failed" >&2; exit 1; }
export PATH="$runner/node_modules/.bin:$PATH"

rm -rf "$out" && mkdir -p "$out"
"$duet" serve --fixtures conformance --transport http --host 127.0.0.1 --port 0 2>"$out/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT
port=""
for _ in $(seq 1 100); do
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$out/server.log" | grep -o '[0-9]*$')
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "conformance: duet did not start" >&2; cat "$out/server.log" >&2; exit 1; }

rc=0
for rev in 2025-11-25 2026-07-28; do
  args=(server --url "http://localhost:$port/mcp" --requirements "$rev" -o "$out/$rev")
  [ -s "$runner/baseline-$rev.yml" ] && args+=(--expected-failures "$runner/baseline-$rev.yml")
  if conformance "${args[@]}" >"$out/$rev.log" 2>&1; then
    echo "conformance $rev: ok"
  else
    echo "conformance $rev: FAILED (log: $out/$rev.log)"
    rc=1
  fi
  sed -n '/=== SUMMARY ===/,$p' "$out/$rev.log" | grep -vE '^\s*$' | head -40
done
exit $rc
