#!/usr/bin/env bash
# Writes the llama.cpp reference of the LoRA test (tests/data/lora_ref_<name>.txt): a
# generated model and a generated adapter for it (make-model --lora, seeded) are served
# by llama.cpp's `llama-server -m BASE --lora ADAPTER`, and three token prompts get 32
# greedy tokens each with the top-5 log-probabilities of every step (from the raw
# logits). tests/lora_reference_test.cc regenerates both files from the `model` and
# `lora` lines and checks llmserve against it, the adapter as GGUF and as PEFT.
#
#   scripts/lora-reference.sh [NAME...]        # default: every reference below
#
# LLAMA_BIN: llama.cpp's bin/ (default ../shared/peers/llama.cpp/bin); LLMSERVE: the
# llmserve binary (default build/release/src/cli/llmserve).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
work=$(mktemp -d)
pid=
trap '[[ -z $pid ]] || stop "$pid"; rm -rf "$work"' EXIT

# name -> make-model arguments of the base; the adapter's arguments.
# GQA (8 heads, 2 KV heads), so that the rotary order of both Q's and K's adapter rows
# is checked; rank 16 on every projection; factors large enough to move the logits.
declare -A models=(
  [llama]="--preset llama-110m --layers 2 --dim 512 --heads 8 --kv-heads 2 --ffn 1024 --vocab 4096 --seed 7 --type f32"
)
declare -A loras=(
  [llama]="--lora-rank 16 --lora-alpha 32 --lora-std 0.05 --lora-seed 11"
)
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${!models[@]}")

for name in "${names[@]}"; do
  args=${models[$name]:?unknown reference $name}
  lora_args=${loras[$name]}
  # shellcheck disable=SC2086
  "$llmserve" make-model $args $lora_args --lora "$work/$name-lora.gguf" "$work/$name.gguf" >/dev/null
  LD_LIBRARY_PATH=$bin "$bin/llama-server" -m "$work/$name.gguf" --lora "$work/$name-lora.gguf" -c 512 -np 1 -t 2 \
    -ctk f32 -ctv f32 --port 18743 >"$work/server.log" 2>&1 &
  pid=$!
  wait_ready localhost:18743/health "$pid" || { tail -20 "$work/server.log"; exit 1; }
  grep -q "lora" "$work/server.log" || { echo "llama-server did not mention the adapter"; tail -20 "$work/server.log"; exit 1; }
  out=$here/tests/data/lora_ref_${name}.txt
  python3 - "$here/scripts" 18743 "$args" "$lora_args" "$out" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from llama_cpp_steps import greedy_steps, prompts
port, args, lora_args, out = sys.argv[2:6]
lines = ["# llama.cpp reference for tests/lora_reference_test.cc, written by scripts/lora-reference.sh",
         "# step: the greedy token (end-of-generation and byte tokens excluded), then the top-5 as id:logprob",
         f"model {args}", f"lora {lora_args}", "context 512"]
for p in prompts(20261206):
    lines.append("prompt " + " ".join(map(str, p)))
    lines += greedy_steps(port, p, 5)
open(out, "w").write("\n".join(lines) + "\n")
print("wrote", out)
PY
  stop "$pid"; pid=
done
