#!/usr/bin/env bash
# Writes the llama.cpp reference of the Hugging Face directory test
# (tests/data/hf_tinystories_656k_f32.txt, read by tests/hf_directory_test.cc):
# ../shared/models/tinystories-656k/hf is converted to an F32 GGUF by
# `llmserve convert --from hf` (the vocabulary from llama.cpp's own Q8_0 conversion in
# the same folder), llama.cpp's llama-server loads that file, and "Once upon a time"
# (llama.cpp's tokens, BOS included) gets 64 greedy tokens with the top-10
# log-probabilities of every step, from the raw logits.
#
#   scripts/hf-reference.sh
#
# LLAMA_BIN points at llama.cpp's bin/ (default ../shared/peers/llama.cpp/bin); LLMSERVE at
# the llmserve binary (default build/release/src/cli/llmserve). The test does not need
# llama.cpp: it reads the committed file.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
models=$here/../shared/models/tinystories-656k
port=${PORT:-18761}
work=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then stop "$pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$llmserve" convert --from hf "$models/hf" "$work/tinystories-f32.gguf" --vocab-from "$models/TinyStories-656K-Q8_0.gguf"
LD_LIBRARY_PATH=$bin "$bin/llama-server" -m "$work/tinystories-f32.gguf" -c 512 -np 1 -t 2 -ctk f32 -ctv f32 \
  --port "$port" >"$work/server.log" 2>&1 &
pid=$!
wait_ready "localhost:$port/health" "$pid" || { tail -20 "$work/server.log"; exit 1; }
python3 - "$port" "$here/tests/data/hf_tinystories_656k_f32.txt" <<'PY'
import json, sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
def post(path, body):
    req = urllib.request.Request(f"http://localhost:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))
prompt = post("/tokenize", {"content": "Once upon a time", "add_special": True})["tokens"]
r = post("/completion", {"prompt": prompt, "n_predict": 64, "n_probs": 10, "temperature": 0, "top_k": 1,
                         "ignore_eos": True, "cache_prompt": False, "repeat_penalty": 1.0,
                         "post_sampling_probs": False, "return_tokens": True})
steps = r["completion_probabilities"]
assert r["tokens_evaluated"] == len(prompt) and [s["id"] for s in steps] == r["tokens"] and len(steps) == 64
lines = ["# llama.cpp reference for tests/hf_directory_test.cc, written by scripts/hf-reference.sh",
         "# llama-server on the F32 GGUF that `llmserve convert --from hf` writes of tinystories-656k/hf;",
         "# step: the greedy token, then the top-10 as id:logprob",
         "model tinystories-656k/hf", "context 512", "prompt " + " ".join(map(str, prompt))]
for s in steps:
    lines.append(f"step {s['id']} " + " ".join(f"{t['id']}:{t['logprob']:.7f}" for t in s["top_logprobs"]))
open(out, "w").write("\n".join(lines) + "\n")
print("wrote", out, "text:", repr(r["content"]))
PY
