#!/usr/bin/env bash
# Shared by scripts/fuzz-*.sh: builds a libFuzzer target (preset "fuzz": clang,
# AddressSanitizer + UndefinedBehaviorSanitizer) and runs it on a corpus.
#   fuzz_build TARGET
#   fuzz_run TARGET SECONDS [libFuzzer flags...]
# The corpus lives in build/fuzz/corpus/TARGET (kept between runs); a crash, leak,
# sanitizer report or broken property stops the run and leaves its reproducer in
# build/fuzz/crashes/TARGET/ — replay it with build/fuzz/fuzz/TARGET FILE.
set -euo pipefail
source scripts/deps.sh
install_fuzz_deps

fuzz_build() {
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz --target "$1"
}

fuzz_corpus() { echo "build/fuzz/corpus/$1"; }

fuzz_run() {
  local target="$1" seconds="$2"
  shift 2
  local corpus crashes
  corpus="$(fuzz_corpus "$target")"
  crashes="build/fuzz/crashes/$target"
  mkdir -p "$corpus" "$crashes"
  # UBSan only reports by default; a fuzzer must stop at the first report.
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
  export LLMSERVE_SHARED_DIR="${LLMSERVE_SHARED_DIR:-$(cd .. && pwd)/shared}"
  echo "fuzz: $target for $seconds s, corpus $corpus ($(find "$corpus" -type f | wc -l) files)"
  "build/fuzz/fuzz/$target" "$corpus" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 \
    -artifact_prefix="$crashes/" "$@"
}
