#!/usr/bin/env bash
# Installs what llmserve needs, builds it (release) and runs the demo: generation on
# a model. With no argument it uses ../shared/models/stories260K.gguf when present,
# else it generates a small synthetic model (random weights) and says so.
#   scripts/setup-and-demo.sh [MODEL.gguf]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
install_deps

cmake --preset release >/dev/null
cmake --build --preset release --target llmserve

BIN=build/release/src/cli/llmserve
MODEL="${1:-}"
PROMPT="Once upon a time"
if [ -z "$MODEL" ]; then
  if [ -f ../shared/models/stories260K.gguf ]; then
    MODEL=../shared/models/stories260K.gguf
  else
    MODEL=build/release/demo-synthetic.gguf
    echo "No model given and ../shared/models/stories260K.gguf is absent:"
    echo "generating a small SYNTHETIC model with RANDOM weights at $MODEL (its text is noise)."
    "$BIN" make-model --preset tiny "$MODEL"
  fi
fi
echo "== llmserve generate -m $MODEL -p \"$PROMPT\" -n 64 --temp 0"
"$BIN" generate -m "$MODEL" -p "$PROMPT" -n 64 --temp 0
