#!/usr/bin/env bash
# duet's benchmark: duet side by side with its peers (rmcp, tower-mcp) and a bare hyper
# ceiling, interleaved in one run, on 127.0.0.1 only. See bench/README.md.
#
#   bench/run.sh                 full run (about 20 min on 2 cores); adds a section to bench/history/, updates bench/RESULTS.md
#   bench/run.sh --quick         smoke mode for CI: ~1 s per case, every server, no thresholds, no RESULTS.md
#   bench/run.sh --note "what changed"   (and any other option of bench/bench.py: --help)
#   bench/run.sh --baseline-rev REV      also runs duet built at git revision REV, as "duet (before)"
#   DUET_BASELINE_BIN=path bench/run.sh  the same with a given binary (or --baseline-bin path)
#   bench/run.sh --replicas      the replicas benchmark instead (bench/replicas.py): duet on a
#                                Redis backplane and three replicas behind nginx (Debian's, pinned)
#   bench/run.sh --workspace     the workspace benchmark instead (bench/workspace.py): duet serving a
#                                generated tree of 200,000 files against the reference filesystem
#                                server (npm, pinned in bench/reference/), ripgrep and fd (Debian's)
#   bench/run.sh --cases client  only the client case: duet's client against rmcp's and the Python
#                                SDK's (bench/clients/), ~5 min after the builds
#
# Installs what it needs, pinned: wrk from Debian's packages (scripts/apt-install.sh), the peers, built from
# crates.io with their committed Cargo.lock (bench/peers/*, outside duet's workspace) into
# $BENCH_TARGET_DIR (default bench/target), and matplotlib for the charts (PyPI, the pins of
# bench/requirements.txt) into a virtual environment there; for the client case, the client
# programs of bench/clients/ (a member of duet's workspace) and the Python SDK's virtual
# environment (scripts/python-venv.sh). Every server it starts is stopped when it ends.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

TARGET_DIR="${BENCH_TARGET_DIR:-$HERE/target}"
QUICK=0
RELEASE=0
REPLICAS=0
WORKSPACE=0
BASELINE_REV=""
CASES=""
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; ARGS+=("$1") ;;
    --release) RELEASE=1 ;;
    --replicas) REPLICAS=1 ;;
    --workspace) WORKSPACE=1 ;;
    --baseline-rev) BASELINE_REV="${2:?--baseline-rev needs a git revision}"; shift ;;
    --baseline-rev=*) BASELINE_REV="${1#*=}" ;;
    --cases) CASES="${2:?--cases needs a list}"; ARGS+=("$1" "$2"); shift ;;
    --cases=*) CASES="${1#*=}"; ARGS+=("$1") ;;
    -h|--help)
      echo "bench/run.sh's own options: --release (a release duet in quick mode too), --baseline-rev REV"
      echo "(duet built at git revision REV as \"duet (before)\"), --replicas, --workspace (benchmarks of their own,"
      echo "bench/replicas.py and bench/workspace.py); the others are bench.py's:"
      exec python3 "$HERE/bench.py" --help ;;
    *) ARGS+=("$1") ;;
  esac
  shift
done
# duet is built in release for a full run; the smoke run takes the (faster to build) debug
# binary unless --release is given or DUET_BIN points at a binary.
PROFILE=release
if [ "$QUICK" = 1 ] && [ "$RELEASE" = 0 ]; then PROFILE=debug; fi

say() { printf '==> %s\n' "$*"; }

# 1. The load generator: wrk, from Debian, pinned (not for the workspace benchmark).
. "$ROOT/scripts/debian-pins.sh"
if [ "$WORKSPACE" = 0 ]; then
  "$ROOT/scripts/apt-install.sh" "$WRK_PIN"
fi

# 2. The peers and the ceiling, from crates.io, with their committed lock files, in release
#    with the fat LTO of their manifests. A smoke run with a debug duet needs no such
#    binaries: it builds them without LTO (minutes faster) into a directory of their own.
PEER_TARGET="$TARGET_DIR"
PEER_ENV=()
if [ "$PROFILE" = debug ]; then
  PEER_TARGET="$TARGET_DIR/smoke"
  PEER_ENV=(CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16)
fi
PEERS=(hyper-ceiling rmcp-echo tower-mcp-echo)
# The client case (in bench.py's default cases) runs none of the peers.
if [ "$REPLICAS" = 1 ] || [ "$WORKSPACE" = 1 ] || [ "$CASES" = client ]; then PEERS=(); fi
CLIENTS=0
if [ "$REPLICAS" = 0 ] && [ "$WORKSPACE" = 0 ] && { [ -z "$CASES" ] || [[ ",$CASES," == *,client,* ]]; }; then CLIENTS=1; fi
for peer in "${PEERS[@]}"; do
  say "building bench/peers/$peer (release)"
  env "${PEER_ENV[@]}" cargo build --quiet --release --locked --manifest-path "$HERE/peers/$peer/Cargo.toml" --target-dir "$PEER_TARGET"
done

# 3. duet itself, with the fixtures it serves (`--fixtures testkit` and `bench`: the binary's
#    `fixtures` feature; docs/features.md).
PROFILE_FLAG=()
if [ "$PROFILE" = release ]; then PROFILE_FLAG=(--release); fi
DUET_TARGET="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
if [ -z "${DUET_BIN:-}" ]; then
  say "building duet ($PROFILE)"
  cargo build --quiet "${PROFILE_FLAG[@]}" -p duet-cli --features fixtures
  DUET_BIN="$DUET_TARGET/$PROFILE/duet"
fi

# The client case's programs: the callers on duet's client and on rmcp's (bench/clients/, in
# duet's workspace, built like duet) and the Python SDK's virtual environment.
CLIENT_ARGS=()
if [ "$CLIENTS" = 1 ]; then
  say "building bench/clients ($PROFILE)"
  cargo build --quiet "${PROFILE_FLAG[@]}" -p bench-clients --bins
  PYTHON_VENV="$("$ROOT/scripts/python-venv.sh")"
  CLIENT_ARGS=(--client-bin-dir "$DUET_TARGET/$PROFILE" --client-python "$PYTHON_VENV/bin/python")
fi

# The replicas benchmark needs Redis and nginx, and none of the peers' charts.
if [ "$REPLICAS" = 1 ]; then
  "$ROOT/scripts/apt-install.sh" "$REDIS_PIN" "$NGINX_PIN"
  say "running the replicas benchmark"
  exec python3 "$HERE/replicas.py" --duet-bin "$DUET_BIN" --wrk "$(command -v wrk)" "${ARGS[@]}"
fi

# The workspace benchmark needs ripgrep and fd from Debian and the reference server from npm,
# each pinned; npm ci installs the reference with the committed lock file of bench/reference/
# (made again when that file changes).
if [ "$WORKSPACE" = 1 ]; then
  "$ROOT/scripts/apt-install.sh" "$RIPGREP_PIN" "$FD_PIN"
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "bench: node and npm are needed for the reference server" >&2; exit 1; }
  REFERENCE="$TARGET_DIR/reference"
  WANT="$(cat "$HERE/reference/package.json" "$HERE/reference/package-lock.json" | sha256sum | cut -c1-16)"
  if [ ! -f "$REFERENCE/.installed" ] || [ "$(cat "$REFERENCE/.installed")" != "$WANT" ]; then
    say "installing the reference filesystem server (npm ci, bench/reference/package-lock.json)"
    rm -rf "$REFERENCE"
    mkdir -p "$REFERENCE"
    cp "$HERE/reference/package.json" "$HERE/reference/package-lock.json" "$REFERENCE/"
    (cd "$REFERENCE" && npm ci --silent --no-audit --no-fund --ignore-scripts)
    echo "$WANT" > "$REFERENCE/.installed"
  fi
  say "running the workspace benchmark"
  exec python3 "$HERE/workspace.py" --duet-bin "$DUET_BIN" --rg /usr/bin/rg --fd /usr/bin/fdfind \
    --reference "$REFERENCE/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" "${ARGS[@]}"
fi

# 4. The baseline, if any: a given binary, or duet built at a git revision (release, cached per
#    commit) in a temporary git worktree; with the fixtures feature when the revision has it
#    (before it, every build had the fixtures).
fixtures_feature() { if grep -q '^fixtures = ' "$1/crates/duet-cli/Cargo.toml"; then echo --features=fixtures; fi; }
if [ -n "$BASELINE_REV" ]; then
  COMMIT="$(git rev-parse --verify --quiet "$BASELINE_REV^{commit}")" || { echo "bench: no such git revision: $BASELINE_REV" >&2; exit 1; }
  DUET_BASELINE_BIN="$TARGET_DIR/baseline/duet-$COMMIT"
  if [ ! -x "$DUET_BASELINE_BIN" ]; then
    WORKTREE="$TARGET_DIR/baseline/src-$COMMIT"
    say "building duet at $BASELINE_REV ($COMMIT) as the baseline (release)"
    git worktree remove --force "$WORKTREE" 2>/dev/null || true
    git worktree add --quiet --detach "$WORKTREE" "$COMMIT"
    (cd "$WORKTREE" && cargo build --quiet --release -p duet-cli $(fixtures_feature "$WORKTREE") --target-dir "$TARGET_DIR/baseline/target")
    cp "$TARGET_DIR/baseline/target/release/duet" "$DUET_BASELINE_BIN.part"
    mv "$DUET_BASELINE_BIN.part" "$DUET_BASELINE_BIN"
    git worktree remove --force "$WORKTREE"
  fi
fi
BASELINE=()
if [ -n "${DUET_BASELINE_BIN:-}" ]; then BASELINE=(--baseline-bin "$DUET_BASELINE_BIN"); fi

# 5. The charts' libraries: matplotlib and its dependencies, pinned, in a virtual environment
#    of the benchmark's own (made again when bench/requirements.txt changes).
VENV="$TARGET_DIR/charts-venv"
WANT="$(sha256sum "$HERE/requirements.txt" | cut -c1-16)"
if [ ! -f "$VENV/.installed" ] || [ "$(cat "$VENV/.installed")" != "$WANT" ]; then
  say "installing the chart libraries (pip, bench/requirements.txt)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: -r "$HERE/requirements.txt"
  echo "$WANT" > "$VENV/.installed"
fi

say "running the benchmark"
exec python3 "$HERE/bench.py" --duet-bin "$DUET_BIN" --peer-bin-dir "$PEER_TARGET/release" --wrk "$(command -v wrk)" \
  --charts-python "$VENV/bin/python" "${BASELINE[@]}" "${CLIENT_ARGS[@]}" "${ARGS[@]}"
