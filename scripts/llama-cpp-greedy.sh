#!/usr/bin/env bash
# Greedy text of llama.cpp's llama-cli and of `llmserve generate` on the same files:
# stories260K quantized by llama-quantize (Q5_K_M, Q3_K_M) and by `llmserve quantize`
# (q5_k, q5_0, q3_k, iq4_xs), 100 tokens from "Once upon a time", F32 KV cache on both
# (see scripts/llama-cpp-logprobs.sh for the per-step log-probabilities).
#   scripts/llama-cpp-greedy.sh
# Prints per file the characters the two texts share from the start, and both texts.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
model=$here/../shared/models/stories260K.gguf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=()
for t in Q5_K_M Q3_K_M; do
  "$bin/llama-quantize" "$model" "$work/llama-$t.gguf" "$t" >/dev/null 2>&1
  files+=("$work/llama-$t.gguf")
done
for t in q5_k q5_0 q3_k iq4_xs; do
  "$llmserve" quantize "$model" "$work/llmserve-$t.gguf" --type "$t" >/dev/null 2>&1
  files+=("$work/llmserve-$t.gguf")
done
for f in "${files[@]}"; do
  a=$("$bin/llama-cli" -m "$f" -p "Once upon a time" -n 100 --temp 0 -no-cnv -ctk f32 -ctv f32 2>/dev/null | tr -d '\n' | sed 's/^ *//')
  b=$("$llmserve" generate -m "$f" -p "Once upon a time" -n 100 --temp 0 -t 2 --kv-type f32 2>/dev/null | tr -d '\n')
  python3 - "$(basename "$f")" "$a" "$b" <<'PY'
import sys
name, a, b = sys.argv[1:4]
n = 0
while n < min(len(a), len(b)) and a[n] == b[n]:
    n += 1
print(f"{name}: {n} characters in common (llama.cpp {len(a)}, llmserve {len(b)})")
print(f"  llama.cpp: {a}")
print(f"  llmserve:  {b}")
PY
done
