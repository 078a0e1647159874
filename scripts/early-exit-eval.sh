#!/usr/bin/env bash
# Confidence early exit (docs/adaptive.md, "Early exit"): makes the evaluation text as
# scripts/prune-eval.sh does (40 stories sampled from stories260K itself, seeds
# 101..140), then runs `llmserve eval-early-exit` on stories260K (every layer, layer 4
# alone, layers 3 and 4) and on a generated llama-110m (Q8_0, random weights: only its
# speed and mechanics mean anything).
#   scripts/early-exit-eval.sh [OUT_DIR]      (default: a temporary directory, removed)
set -euo pipefail
source "$(dirname "$0")/eval-text-lib.sh"
eval_text_setup "$@"

thresholds=1.0,0.99,0.95,0.9,0.8,0.6,0.4
run() {
  local m=$1
  shift
  echo
  echo "\$ llmserve eval-early-exit -m $(basename "$m") $*"
  nice -n 19 "$llmserve" eval-early-exit -m "$m" -t 1 "$@" 2>/dev/null
}
run "$model" -f "$text" --thresholds $thresholds --decode-prompts 16 --decode-tokens 128
run "$model" -f "$text" --thresholds $thresholds --exit-layers 4 --decode-prompts 16 --decode-tokens 128
run "$model" -f "$text" --thresholds $thresholds --exit-layers 3,4 --decode-prompts 16 --decode-tokens 128

big=$work/llama110m-q8_0.gguf
nice -n 19 "$llmserve" make-model --preset llama-110m --type q8_0 "$big" >/dev/null 2>&1
head -c 6000 "$text" >"$work/eval_short.txt"
for layers in 3 6 9 3,6,9; do
  run "$big" -f "$work/eval_short.txt" --thresholds 1.0,0.000001 --exit-layers $layers --decode-prompts 4 \
    --prompt-tokens 16 --decode-tokens 64
done
