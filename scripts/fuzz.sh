#!/usr/bin/env bash
# Fuzzes duet with cargo-fuzz (libFuzzer): every target in fuzz/ (or those named), each over
# its committed seed corpus, fuzz/corpus/TARGET/. docs/fuzzing.md says what each checks.
#
#   ./scripts/fuzz.sh [SECONDS] [TARGET...]       each for SECONDS (default 10), quick to build
#   ./scripts/fuzz.sh --long MINUTES [TARGET...]  each for MINUTES, optimized build
#
# The brief run (test.sh's) builds without optimizations: it compiles in half the time, which
# matters more than speed for a few seconds a target. Both builds have AddressSanitizer and
# debug assertions. Installs cargo-fuzz (pinned) under target/tools on first use. New inputs
# go to target/fuzz/corpus/TARGET/, never into fuzz/corpus/; a crash, a timeout or running
# out of memory fails the run, and the input that did it is kept under
# target/fuzz/artifacts/TARGET/ (the path is printed).
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
# libFuzzer's instrumentation needs unstable flags: the nightly toolchain when there is one,
# else the stable one told to accept them (its standard library ships the sanitizer runtimes).
if cargo +nightly --version >/dev/null 2>&1; then
  toolchain=(+nightly)
else
  echo "fuzz.sh: no nightly toolchain; fuzzing with $(rustc --version) and RUSTC_BOOTSTRAP=1" >&2
  toolchain=()
  export RUSTC_BOOTSTRAP=1
fi
out=${CARGO_TARGET_DIR:-$PWD/target}
tools=$out/tools
if [[ "$("$tools/bin/cargo-fuzz" --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$tools"
fi
export PATH=$tools/bin:$PATH

if [[ ${1:-} == --long ]]; then
  seconds=$((${2:?usage: fuzz.sh --long MINUTES [TARGET...]} * 60))
  profile=()
  shift 2
else
  seconds=${1:-10}
  profile=(--dev)
  shift $(($# > 0 ? 1 : 0))
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cargo "${toolchain[@]}" fuzz list --fuzz-dir fuzz)
fi

build=(--fuzz-dir fuzz --target-dir "$out/fuzz" "${profile[@]}")
cargo "${toolchain[@]}" fuzz build "${build[@]}"
failed=()
for target in "${targets[@]}"; do
  printf '\n--> %s, %s s\n' "$target" "$seconds"
  found=$out/fuzz/corpus/$target artifacts=$out/fuzz/artifacts/$target
  mkdir -p "$found" "$artifacts"
  # libFuzzer adds new inputs to the first corpus directory only.
  if ! cargo "${toolchain[@]}" fuzz run "${build[@]}" "$target" "$found" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" \
    -print_final_stats=1 2>"$out/fuzz/$target.log"; then
    grep -E -A8 'panicked at|==ERROR|ERROR: libFuzzer' "$out/fuzz/$target.log" | head -n 30 >&2
    failed+=("$target: $(ls -t "$artifacts"/* 2>/dev/null | head -n 1)")
  fi
  grep -E '^(Done |stat::peak_rss_mb)' "$out/fuzz/$target.log" || true
done

if ((${#failed[@]} > 0)); then
  printf '\nfuzzing found a failure; the input is kept at:\n' >&2
  printf '  %s\n' "${failed[@]}" >&2
  printf 'replay one with: cargo %s fuzz run %s TARGET INPUT\n' "${toolchain[*]}" "${build[*]}" >&2
  exit 1
fi
printf '\nfuzzing: %s targets, %s s each, no failure\n' "${#targets[@]}" "$seconds"
