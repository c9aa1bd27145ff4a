#!/usr/bin/env bash
# Runs every client scenario of the official MCP conformance suite (pinned in
# conformance/package-lock.json, with Node 22 from npm) against duet-conformance-client:
# both requirement sets (each at its revision's wire), then, one by one, every client
# scenario neither set runs (`conformance list --client`: the 2025-03-26 authorization
# fallbacks, the skills extension...). The suite starts each scenario's mock servers on
# loopback itself and stops them. Fails when any check, scored or not, failed, warned or
# was skipped (conformance/verdict.mjs counts them), or when the client exited in error
# where the scenario does not allow it; the only exceptions are the checks no conforming
# client can pass, each listed with why in conformance/client-known.json and counted as
# "known". Prints one line per run, ok or FAILED with its counts, and a failed run's
# summary.
# The client is $DUET_CONFORMANCE_CLIENT, else target/debug/duet-conformance-client
# (cargo build -p duet-client --bins).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runner="$root/conformance"
target=${CARGO_TARGET_DIR:-$root/target}
client=${DUET_CONFORMANCE_CLIENT:-$target/debug/duet-conformance-client}
out=${CONFORMANCE_OUT:-$target/conformance-client}

[ -x "$client" ] || { echo "conformance-client: no client at $client (cargo build -p duet-client --bins)" >&2; exit 1; }
( cd "$runner" && npm ci --no-audit --no-fund --loglevel=error ) || { echo "conformance-client: npm ci failed" >&2; exit 1; }
export PATH="$runner/node_modules/.bin:$PATH"
rm -rf "$out" && mkdir -p "$out"

rc=0
# Runs `conformance client` with the arguments after $1 (the run's name), writing under
# $out/$1; says ok or FAILED.
run() {
  local name=$1; shift
  local dir="$out/${name//\//_}"
  conformance client --command "$client" "$@" -o "$dir" >"$dir.log" 2>&1
  local code=$?
  local counts
  counts=$(node "$runner/verdict.mjs" "$dir" --known "$runner/client-known.json")
  local verdict=$?
  if [ $code -eq 0 ] && [ $verdict -eq 0 ]; then
    echo "conformance client $name: ok ($counts)"
  else
    echo "conformance client $name: FAILED ($counts; log: $dir.log)"
    grep -E '^(✗|Total)' "$dir.log" | head -60
    rc=1
  fi
}

ran=" "
for rev in 2025-11-25 2026-07-28; do
  run "$rev" --requirements "$rev"
  ran+="$(conformance list --requirements "$rev" | sed -n '/Client scenarios/,$p' | awk '$1 == "-" {print $2}' | tr '\n' ' ')"
done
for scenario in $(conformance list --client | awk '$1 == "-" {print $2}'); do
  [[ $ran == *" $scenario "* ]] || run "$scenario" --scenario "$scenario"
done
exit $rc
