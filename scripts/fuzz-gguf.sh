#!/usr/bin/env bash
# Fuzzes the GGUF reader: any file parses or fails with a Status, and tensors lie
# inside the file.
#   scripts/fuzz-gguf.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
fuzz_build gguf_fuzz
cmake --preset release >/dev/null
cmake --build --preset release --target llmserve
CORPUS="$(fuzz_corpus gguf_fuzz)"
mkdir -p "$CORPUS"
BIN=build/release/src/cli/llmserve
# Seeds: small valid models of both architectures written by our own writer.
"$BIN" make-model --preset tiny --dim 8 --heads 2 --kv-heads 1 --ffn 8 --layers 1 --vocab 260 "$CORPUS/seed-llama.gguf" >/dev/null
"$BIN" make-model --preset tiny --arch qwen2 --dim 8 --heads 2 --kv-heads 2 --ffn 8 --layers 1 --vocab 260 --type f16 "$CORPUS/seed-qwen2.gguf" >/dev/null
fuzz_run gguf_fuzz "${1:-600}" -max_len=65536
