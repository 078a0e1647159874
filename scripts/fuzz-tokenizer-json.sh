#!/usr/bin/env bash
# Fuzzes the tokenizer.json reader: any file loads or fails with a Status, and a
# tokenizer that loads encodes into its vocabulary. A structure-aware JSON mutator
# works from small hand-written files (fuzz/seeds/tokenizer_json) and, where the shared
# data is present, the TinyStories-656K tokenizer.json (copied into the corpus, which
# lives under build/, never into the repository).
#   scripts/fuzz-tokenizer-json.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
fuzz_build tokenizer_json_fuzz
CORPUS="$(fuzz_corpus tokenizer_json_fuzz)"
mkdir -p "$CORPUS"
cp fuzz/seeds/tokenizer_json/*.json "$CORPUS/"
SHARED="${LLMSERVE_SHARED_DIR:-$(cd .. && pwd)/shared}"
if [ -f "$SHARED/models/tinystories-656k/hf/tokenizer.json" ]; then
  cp "$SHARED/models/tinystories-656k/hf/tokenizer.json" "$CORPUS/seed-tinystories.json"
fi
fuzz_run tokenizer_json_fuzz "${1:-600}" -max_len=131072 -dict=fuzz/dict/tokenizer_json.dict
