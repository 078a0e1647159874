#!/usr/bin/env bash
# Writes the llama.cpp reference files of the architecture tests (tests/data/arch_ref_*.txt):
# for each architecture, a generated model (make-model, seeded, F32 and Q8_0) is served by
# llama.cpp's llama-server, and three token prompts get 32 greedy tokens each with the
# top-10 log-probabilities of every step (from the raw logits, not after sampling).
#
#   scripts/arch-reference.sh [ARCH...]        # default: every architecture below
#
# LLAMA_BIN points at llama.cpp's bin/ (default ../shared/peers/llama.cpp/bin); LLMSERVE at
# the llmserve binary (default build/release/src/cli/llmserve). Nothing in the tests needs
# llama.cpp: they read the committed files and regenerate the model from the make-model
# arguments on each file's `model` line (tests/arch_reference_test.cc).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
port=${PORT:-18741}
work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# name -> make-model arguments (2-4 layers, real-shaped layers, a small vocabulary).
declare -A models=(
  [gpt2]="--preset gpt2-small --layers 2 --vocab 4096 --seed 7"
  [phi3]="--preset phi3-mini --layers 2 --dim 768 --heads 8 --kv-heads 4 --ffn 2048 --vocab 4096 --seed 7"
  # Gemma-2 keeps the 2B's 26 layers: this llama.cpp picks its score scale by the layer
  # count (26, 42 or 46) and refuses any other; heads of 256 and GQA 2:1 as the 2B's.
  [gemma2]="--preset gemma2-2b --dim 256 --heads 2 --kv-heads 1 --ffn 512 --vocab 4096 --seed 7"
  # The same with a window of 8 on the local (even) layers, so that the prompts of 7 and
  # 40 tokens and their 32 steps run past it.
  [gemma2swa]="--preset gemma2-2b --dim 256 --heads 2 --kv-heads 1 --ffn 512 --vocab 4096 --seed 7 --sliding-window 8"
  # Phi-3-mini-4k's window (2047 in the real file) as 8, on the 4k context (short factors).
  [phi3swa]="--preset phi3-mini --layers 2 --dim 768 --heads 8 --kv-heads 4 --ffn 2048 --vocab 4096 --seed 7 --ctx 4096 --sliding-window 8"
  # Qwen2 with YaRN (factor 4 over an original context of 2048, as Qwen2.5's long-context setting).
  [qwen2yarn]="--preset llama-110m --arch qwen2 --layers 2 --dim 512 --heads 8 --kv-heads 2 --ffn 1024 --vocab 4096 --seed 7 --ctx 8192 --rope-scaling yarn"
  # Mixtral's 8 experts, 2 per token, and GQA 4:1; Qwen1.5-MoE's 60 fine-grained
  # experts, 4 per token, and a shared expert (narrower than the real ones).
  [mixtral]="--preset mixtral-8x7b --layers 2 --dim 512 --heads 8 --kv-heads 2 --ffn 1024 --vocab 4096 --seed 7"
  # LLaMA with Llama-3.1's RoPE scaling (rope_freqs), and Mistral's shape: a window longer
  # than the tests' sequences (which llmserve holds within it).
  [llama3]="--preset llama-110m --layers 2 --dim 512 --heads 8 --kv-heads 2 --ffn 1024 --vocab 4096 --seed 7 --rope-scaling llama3"
  [mistral]="--preset llama-110m --layers 2 --dim 512 --heads 8 --kv-heads 2 --ffn 1024 --vocab 4096 --seed 7 --sliding-window 4096"
  [qwen2moe]="--preset qwen2moe-a2.7b --layers 2 --dim 512 --heads 8 --kv-heads 8 --ffn 1024 --expert-ffn 256 --vocab 4096 --seed 7"
)
# name -> the server's context: Phi-3 past its 4096 trained positions, so that llama.cpp
# (and the test, through ForwardState::set_context_length) rotates with the long factors.
declare -A contexts=([gpt2]=512 [phi3]=8192 [gemma2]=512 [gemma2swa]=512 [mixtral]=512 [qwen2moe]=512 [phi3swa]=512 [qwen2yarn]=512 [llama3]=512 [mistral]=512)
archs=("$@")
[[ ${#archs[@]} -gt 0 ]] || archs=("${!models[@]}")

for arch in "${archs[@]}"; do
  args=${models[$arch]:?unknown architecture $arch}
  for type in f32 q8_0; do
    file=$work/$arch-$type.gguf
    # shellcheck disable=SC2086
    "$llmserve" make-model $args --type "$type" "$file" >/dev/null
    LD_LIBRARY_PATH=$bin "$bin/llama-server" -m "$file" -c "${contexts[$arch]}" -np 1 -t 2 -ctk f32 -ctv f32 --port "$port" \
      >"$work/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 120); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 1; done
    curl -sf "localhost:$port/health" >/dev/null || { tail -20 "$work/server.log"; exit 1; }
    out=$here/tests/data/arch_ref_${arch}_${type}.txt
    python3 - "$here/scripts" "$port" "$args --type $type" "$out" "${contexts[$arch]}" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from llama_cpp_steps import greedy_steps, prompts
port, args, out, context = sys.argv[2:6]
lines = ["# llama.cpp reference for tests/arch_reference_test.cc, written by scripts/arch-reference.sh",
         "# step: the greedy token (end-of-generation and byte tokens excluded), then the top-10 as id:logprob",
         f"model {args}", f"context {context}"]
for p in prompts(20261201):
    lines.append("prompt " + " ".join(map(str, p)))
    lines += greedy_steps(port, p, 10)
open(out, "w").write("\n".join(lines) + "\n")
print("wrote", out)
PY
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
  done
done
