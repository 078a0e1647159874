#!/usr/bin/env bash
# Magnitude pruning of stories260K without fine-tuning (docs/adaptive.md, "Magnitude
# pruning"): makes the evaluation text by sampling the F32 model itself, then runs
# `llmserve eval-prune` for each pattern and schedule.
#   scripts/prune-eval.sh [OUT_DIR]      (default: a temporary directory, removed)
# Evaluation text: scripts/sampled-eval-text.sh (40 stories sampled from the model
# itself), kept as OUT_DIR/eval_samples.txt.
set -euo pipefail
source "$(dirname "$0")/eval-text-lib.sh"
eval_text_setup "$@"

levels=0.1,0.2,0.3,0.4,0.5,0.6,0.7
run() {
  echo
  echo "\$ llmserve eval-prune -m stories260K.gguf -f eval_samples.txt $*"
  nice -n 19 "$llmserve" eval-prune -m "$model" -f "$text" -t 1 "$@" 2>/dev/null
}
run --sparsities $levels --pattern unstructured
run --sparsities $levels --pattern unstructured --schedule depth
run --sparsities $levels --pattern block:4
run --pattern 2:4
