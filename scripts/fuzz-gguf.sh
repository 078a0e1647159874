#!/usr/bin/env bash
# Builds the GGUF reader fuzzer (clang, ASan + UBSan) and runs it.
#   scripts/fuzz-gguf.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-600}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target gguf_fuzz
cmake --preset release >/dev/null
cmake --build --preset release --target llmserve
CORPUS=build/fuzz/corpus
mkdir -p "$CORPUS"
BIN=build/release/src/cli/llmserve
# Seeds: small valid models of both architectures written by our own writer.
"$BIN" make-model --preset tiny --dim 8 --heads 2 --kv-heads 1 --ffn 8 --layers 1 --vocab 260 "$CORPUS/seed-llama.gguf" >/dev/null
"$BIN" make-model --preset tiny --arch qwen2 --dim 8 --heads 2 --kv-heads 2 --ffn 8 --layers 1 --vocab 260 --type f16 "$CORPUS/seed-qwen2.gguf" >/dev/null
build/fuzz/fuzz/gguf_fuzz "$CORPUS" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -print_final_stats=1 -rss_limit_mb=2048
