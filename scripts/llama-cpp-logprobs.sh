#!/usr/bin/env bash
# Per-step log-probabilities of llama.cpp's llama-server and of `llmserve serve` on the
# same files, F32 KV cache on both sides: 100 greedy tokens from "Once upon a time",
# the top-3 log-probabilities of every step compared while the two texts agree.
#   scripts/llama-cpp-logprobs.sh FILE.gguf...     (default: stories260K and its
#                                                   llama-quantize Q5_K_M and Q3_K_M)
# Prints per file: the greedy tokens in common, the median and the largest per-step
# difference, and the steps whose difference exceeds 1e-4 (where an activation's
# rounding went the other way in one engine: see docs/quantization.md).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
model=$here/../shared/models/stories260K.gguf
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop "$p"; done
  rm -rf "$work"
}
trap cleanup EXIT
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
  files=("$model")
  for t in Q5_K_M Q3_K_M; do
    "$bin/llama-quantize" "$model" "$work/llama-$t.gguf" "$t" >/dev/null 2>&1
    files+=("$work/llama-$t.gguf")
  done
fi
for f in "${files[@]}"; do
  LD_LIBRARY_PATH=$bin "$bin/llama-server" -m "$f" -c 512 -np 1 -t 2 -ctk f32 -ctv f32 --port 18851 \
    >"$work/llama.log" 2>&1 &
  pids=($!)
  "$llmserve" serve -m "$f" --port 18852 --threads 2 --kv-type f32 >"$work/llmserve.log" 2>&1 &
  pids+=($!)
  wait_ready localhost:18851/health "${pids[0]}" || { tail -5 "$work/llama.log"; exit 1; }
  wait_ready localhost:18852/health "${pids[1]}" || { tail -5 "$work/llmserve.log"; exit 1; }
  python3 - "$(basename "$f")" <<'PY'
import json, statistics, sys, urllib.request
def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))
a = post("http://localhost:18851/completion", {
    "prompt": "Once upon a time", "n_predict": 100, "n_probs": 3, "temperature": 0, "top_k": 1,
    "cache_prompt": False, "repeat_penalty": 1.0, "post_sampling_probs": False})["completion_probabilities"]
b = post("http://localhost:18852/v1/completions", {
    "prompt": "Once upon a time", "max_tokens": 100, "temperature": 0, "logprobs": 3})["choices"][0]["logprobs"]
common, diffs = 0, []
for step, top, token in zip(a, b["top_logprobs"], b["tokens"]):
    if step["token"] != token:
        break
    diffs.append(max(abs(t["logprob"] - top[t["token"]]) for t in step["top_logprobs"] if t["token"] in top))
    common += 1
big = [(i, round(d, 4)) for i, d in enumerate(diffs) if d > 1e-4]
print(f"{sys.argv[1]}: {common} of {len(a)} greedy tokens in common; per-step |dlogprob| median "
      f"{statistics.median(diffs):.1e}, max {max(diffs):.1e}; steps above 1e-4: {big}")
PY
  for p in "${pids[@]}"; do stop "$p"; done
  pids=()
done
