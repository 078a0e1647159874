#!/usr/bin/env bash
# The evaluation text of the adaptive-compute scripts (docs/adaptive.md): 40 stories
# sampled from the F32 stories260K model itself, each `llmserve generate -p "Once upon
# a time" -n 200 --temp 1 --top-k 0 --top-p 1 --min-p 0 --seed S` for S = 101..140
# (plain sampling from the model's full distribution; seeds disjoint from the 1..30 of
# the quantization calibration text), one story per paragraph. Deterministic.
#   scripts/sampled-eval-text.sh OUT_FILE
# Environment: LLMSERVE (the binary), MODEL (default ../shared/models/stories260K.gguf).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
model=${MODEL:-$here/../shared/models/stories260K.gguf}
text=${1:?usage: sampled-eval-text.sh OUT_FILE}
: >"$text"
for seed in $(seq 101 140); do
  nice -n 19 "$llmserve" generate -m "$model" -p "Once upon a time" -n 200 --temp 1 --top-k 0 --top-p 1 --min-p 0 \
    --seed "$seed" 2>/dev/null >>"$text"
  echo >>"$text"
done
echo "evaluation text: $(wc -w <"$text") words, sha256 $(sha256sum "$text" | cut -c1-16)"
