#!/usr/bin/env bash
# Automatic precision (docs/adaptive.md, "Automatic precision"): makes the evaluation
# text as scripts/prune-eval.sh does (40 stories sampled from stories260K itself, seeds
# 101..140), then runs `llmserve eval-precision` on stories260K with the variants
# q4_k,q8_0,f16: always-cheapest, always-best and auto at several entropy bounds, on a
# workload of short and long prompts cut from that text.
#   scripts/precision-eval.sh [OUT_DIR]      (default: a temporary directory, removed)
set -euo pipefail
source "$(dirname "$0")/eval-text-lib.sh"
eval_text_setup "$@"

run() {
  echo
  echo "\$ llmserve eval-precision -m $(basename "$model") $*"
  nice -n 19 "$llmserve" eval-precision -m "$model" -f "$text" -t 1 "$@" 2>/dev/null
}
common=(--requests 64 --short-prompt 16 --long-prompt 128 --gen 64 --rounds 3)
# Two variants, the estimator alone (short prompts to q4_k), then with fallback bounds.
run --variants q4_k,f16 --precision-prompt-max 32 --precision-max-tokens 64 \
  --precision-entropy 0,2.5,2.0,1.5,1.0 --precision-window 4 "${common[@]}"
# Three tiers: short to q4_k, long to q8_0, fallback upward from either.
run --variants q4_k,q8_0,f16 --precision-prompt-max 32,1000 --precision-max-tokens 64,1000 \
  --precision-entropy 0,2.0,1.5 --precision-window 4 "${common[@]}"

# Speed where weight reads are the cost: a generated llama-110m (F16 source, random
# weights: its quality columns mean nothing, its tok/s and weight bytes do).
big=$work/llama110m-f16.gguf
nice -n 19 "$llmserve" make-model --preset llama-110m --type f16 "$big" >/dev/null 2>&1
model=$big run --variants q4_k,f16 --precision-prompt-max 32 --precision-max-tokens 64 \
  --precision-entropy 0 --requests 16 --short-prompt 16 --long-prompt 64 --gen 32 --rounds 3
