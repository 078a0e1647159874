#!/usr/bin/env bash
# Fuzzes the safetensors reader: any file parses or fails with a Status, and the
# tensors of one that parses lie inside it and tile its data section.
#   scripts/fuzz-safetensors.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
fuzz_build safetensors_fuzz
cmake --preset release >/dev/null
cmake --build --preset release --target llmserve
CORPUS="$(fuzz_corpus safetensors_fuzz)"
mkdir -p "$CORPUS"
BIN=build/release/src/cli/llmserve
# Seeds: small Hugging Face weight files (a dense F16 model and an MoE one) written by
# our own writer.
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
"$BIN" make-model --format hf --preset tiny --dim 8 --heads 2 --kv-heads 1 --ffn 8 --layers 1 --vocab 260 --type f16 \
  "$seeds/llama" >/dev/null
"$BIN" make-model --format hf --preset tiny --arch qwen2moe --experts 2 --dim 8 --heads 2 --kv-heads 2 --ffn 8 \
  --layers 1 --vocab 260 "$seeds/qwen2moe" >/dev/null
cp "$seeds/llama/model.safetensors" "$CORPUS/seed-llama.safetensors"
cp "$seeds/qwen2moe/model.safetensors" "$CORPUS/seed-qwen2moe.safetensors"
fuzz_run safetensors_fuzz "${1:-600}" -max_len=65536 -dict=fuzz/dict/safetensors.dict
