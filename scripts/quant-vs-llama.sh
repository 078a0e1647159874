#!/usr/bin/env bash
# llmserve's planned quantizations against llama.cpp's recipes on stories260K, at the
# file sizes of llama-quantize's Q4_K_M, Q5_K_M and Q6_K, with and without an
# importance file; every file measured by `llmserve perplexity` (KL divergence and
# top-1 agreement against the F32 model, all positions of 128-token windows) and by
# llama.cpp's `llama-perplexity --kl-divergence` (its KLD and "same top p", the second
# half of each 128-token window), on the same held-out text.
#   scripts/quant-vs-llama.sh
# The last row is `--type q8_0` with the calibration text (the measured policy).
# Calibration text: 30 stories of 200 tokens sampled from the F32 model itself
# (`llmserve generate --temp 1 --seed 1..30`). Evaluation text: tests/data/eval_stories.txt,
# written for the project, not sampled from the model. A second table measures the Q8_0
# files on a held-out text sampled from the F32 model as the calibration text is, with
# other seeds (60 stories, seeds 101..160, about 12,400 tokens).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
model=$here/../shared/models/stories260K.gguf
eval_text=$here/tests/data/eval_stories.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sample_stories() {  # FIRST_SEED LAST_SEED OUT: a 200-token story from the F32 model per seed
  for seed in $(seq "$1" "$2"); do
    "$llmserve" generate -m "$model" -p "Once upon a time" -n 200 --temp 1 --seed "$seed" 2>/dev/null >>"$3"
    echo >>"$3"
  done
}
sample_stories 1 30 "$work/calib.txt"
sample_stories 101 160 "$work/sampled.txt"
"$llmserve" imatrix -m "$model" -f "$work/calib.txt" -o "$work/imatrix.gguf" >/dev/null
for text in "$eval_text" "$work/sampled.txt"; do
  LD_LIBRARY_PATH=$bin "$bin/llama-perplexity" -m "$model" -f "$text" -c 128 -t 2 \
    --kl-divergence-base "$work/base-$(basename "$text").kld" >/dev/null 2>&1
done

measure() {  # FILE [TEXT] -> "ours_kl ours_top1 ours_ppl llama_kl llama_same_top"
  local ours llama text=${2:-$eval_text}
  ours=$("$llmserve" perplexity -m "$1" -f "$text" --base "$model" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.6f %.2f%% %.4f" % (d["kl_divergence"], 100 * d["top1_agreement"], d["perplexity"]))')
  llama=$(LD_LIBRARY_PATH=$bin "$bin/llama-perplexity" -m "$1" -f "$text" -c 128 -t 2 \
    --kl-divergence-base "$work/base-$(basename "$text").kld" --kl-divergence 2>&1 |
    awk '/^Mean    KLD:/ {k=$3} /^Same top p:/ {s=$4} END {print k, s "%"}')
  echo "$ours $llama"
}

f32_perplexity() {  # TEXT -> the F32 model's perplexity on it
  "$llmserve" perplexity -m "$model" -f "$1" --json 2>/dev/null | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["perplexity"])'
}
bytes() { stat -c %s "$1"; }
bpw() { python3 -c "print(f'{8 * $1 / $2:.3f}')"; }
elements=$("$llmserve" inspect "$model" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["parameters"])')

echo "| file | bytes | bits/weight | KL (llmserve) | top-1 (llmserve) | perplexity | KLD (llama-perplexity) | same top p (llama-perplexity) |"
echo "|---|---|---|---|---|---|---|---|"
echo "| F32 (source) | $(bytes "$model") | 32 | 0 | 100% | $(f32_perplexity "$eval_text") | 0 | 100% |"
for recipe in Q4_K_M Q5_K_M Q6_K; do
  "$bin/llama-quantize" "$model" "$work/llama-$recipe.gguf" "$recipe" >/dev/null 2>&1
  size=$(bytes "$work/llama-$recipe.gguf")
  read -r k t p lk ls <<<"$(measure "$work/llama-$recipe.gguf")"
  echo "| llama.cpp $recipe | $size | $(bpw "$size" "$elements") | $k | $t | $p | $lk | $ls |"
  for imatrix in "" "--imatrix $work/imatrix.gguf"; do
    # shellcheck disable=SC2086
    "$llmserve" quantize "$model" "$work/ours.gguf" --target-size "$size" --calib "$work/calib.txt" \
      --eval "$eval_text" $imatrix >/dev/null 2>&1
    ours=$(bytes "$work/ours.gguf")
    read -r k t p lk ls <<<"$(measure "$work/ours.gguf")"
    echo "| llmserve --target-size $size${imatrix:+ --imatrix} | $ours | $(bpw "$ours" "$elements") | $k | $t | $p | $lk | $ls |"
  done
done
for imatrix in "" "--imatrix $work/imatrix.gguf"; do
  # shellcheck disable=SC2086
  q8=$work/q8${imatrix:+-imatrix}.gguf
  "$llmserve" quantize "$model" "$q8" --type q8_0 $imatrix >/dev/null 2>&1
  size=$(bytes "$q8")
  read -r k t p lk ls <<<"$(measure "$q8")"
  echo "| llmserve --type q8_0${imatrix:+ --imatrix} | $size | $(bpw "$size" "$elements") | $k | $t | $p | $lk | $ls |"
done
# The measured policy: --type q8_0 with the calibration text protects where it measures.
"$llmserve" quantize "$model" "$work/q8m.gguf" --type q8_0 --calib "$work/calib.txt" --eval "$eval_text" >/dev/null 2>&1
size=$(bytes "$work/q8m.gguf")
read -r k t p lk ls <<<"$(measure "$work/q8m.gguf")"
echo "| llmserve --type q8_0 --calib | $size | $(bpw "$size" "$elements") | $k | $t | $p | $lk | $ls |"

echo
echo "Q8_0 on the sampled held-out text (seeds 101..160):"
echo "| file | KL (llmserve) | top-1 (llmserve) | perplexity | KLD (llama-perplexity) | same top p (llama-perplexity) |"
echo "|---|---|---|---|---|---|"
echo "| F32 (source) | 0 | 100% | $(f32_perplexity "$work/sampled.txt") | 0 | 100% |"
for q8 in q8 q8m; do
  read -r k t p lk ls <<<"$(measure "$work/$q8.gguf" "$work/sampled.txt")"
  echo "| llmserve --type q8_0$([[ $q8 == q8m ]] && echo " --calib") | $k | $t | $p | $lk | $ls |"
done
