#!/usr/bin/env bash
# duet's benchmark: duet side by side with its peers (rmcp, tower-mcp) and a bare hyper
# ceiling, interleaved in one run, on 127.0.0.1 only. See bench/README.md.
#
#   bench/run.sh                 full run (about 15 min on 2 cores); adds a section to bench/RESULTS.md
#   bench/run.sh --quick         smoke mode for CI: ~1 s per case, every server, no thresholds, no RESULTS.md
#   bench/run.sh --note "what changed"   (and any other option of bench/bench.py: --help)
#
# Installs what it needs, pinned: wrk from Debian's packages (apt-get), and the peers, built
# from crates.io with their committed Cargo.lock (bench/peers/*, outside duet's workspace)
# into $BENCH_TARGET_DIR (default bench/target). Every server it starts is stopped when it ends.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

WRK_VERSION="4.1.0-3+b2"
TARGET_DIR="${BENCH_TARGET_DIR:-$HERE/target}"
QUICK=0
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    -h|--help) exec python3 "$HERE/bench.py" --help ;;
  esac
done

say() { printf '==> %s\n' "$*"; }

# 1. The load generator: wrk, from Debian, pinned.
if ! command -v wrk >/dev/null 2>&1 || [ "$(dpkg-query -W -f='${Version}' wrk 2>/dev/null || true)" != "$WRK_VERSION" ]; then
  SUDO=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      SUDO=(sudo -n)
    else
      echo "bench: wrk $WRK_VERSION is needed: run 'apt-get install wrk=$WRK_VERSION' as root" >&2
      exit 1
    fi
  fi
  say "installing wrk $WRK_VERSION (apt-get)"
  APT=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
  if ! "${APT[@]}" install -y -q "wrk=$WRK_VERSION" >/dev/null; then
    "${APT[@]}" update -q >/dev/null
    "${APT[@]}" install -y -q "wrk=$WRK_VERSION" >/dev/null || {
      echo "bench: wrk $WRK_VERSION is no longer in Debian's archive; installing the current wrk" >&2
      "${APT[@]}" install -y -q wrk >/dev/null
    }
  fi
fi

# duet is built in release for a full run; the smoke run takes the (faster to build) debug
# binary unless --release is given or DUET_BIN points at a binary.
PROFILE=release
if [ "$QUICK" = 1 ]; then PROFILE=debug; fi
ARGS=()
for a in "$@"; do
  if [ "$a" = "--release" ]; then PROFILE=release; else ARGS+=("$a"); fi
done

# 2. The peers and the ceiling, from crates.io, with their committed lock files, in release
#    with the fat LTO of their manifests. A smoke run with a debug duet needs no such
#    binaries: it builds them without LTO (minutes faster) into a directory of their own.
PEER_TARGET="$TARGET_DIR"
PEER_ENV=()
if [ "$PROFILE" = debug ]; then
  PEER_TARGET="$TARGET_DIR/smoke"
  PEER_ENV=(CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16)
fi
for peer in hyper-ceiling rmcp-echo tower-mcp-echo; do
  say "building bench/peers/$peer (release)"
  env "${PEER_ENV[@]}" cargo build --quiet --release --locked --manifest-path "$HERE/peers/$peer/Cargo.toml" --target-dir "$PEER_TARGET"
done

# 3. duet itself.
if [ -z "${DUET_BIN:-}" ]; then
  say "building duet ($PROFILE)"
  if [ "$PROFILE" = release ]; then cargo build --quiet --release -p duet-cli; else cargo build --quiet -p duet-cli; fi
  DUET_TARGET="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  DUET_BIN="$DUET_TARGET/$PROFILE/duet"
fi

say "running the benchmark"
exec python3 "$HERE/bench.py" --duet-bin "$DUET_BIN" --peer-bin-dir "$PEER_TARGET/release" --wrk "$(command -v wrk)" "${ARGS[@]}"
