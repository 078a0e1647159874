#!/usr/bin/env bash
# `llmserve convert --from hf` against llama.cpp, every architecture: the generated model
# of each llama.cpp check (the make-model arguments of tests/data/arch_ref_*_f32.txt) is
# written as a Hugging Face directory (make-model --format hf), converted back to GGUF
# (the vocabulary from the generated GGUF), and llama.cpp's llama-server must load the
# converted file and give the same greedy tokens and top-10 log-probabilities as on the
# generated GGUF for a 7-token prompt.
#   scripts/hf-convert-llama-check.sh [REFERENCE_NAME...]   (default: every arch_ref_*_f32)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
port=${PORT:-18771}
work=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then stop "$pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
  for f in "$here"/tests/data/arch_ref_*_f32.txt; do n=${f##*/arch_ref_}; names+=("${n%_f32.txt}"); done
fi
answer() {  # FILE CONTEXT -> greedy ids and top-10 of 16 steps, as one line per step
  LD_LIBRARY_PATH=$bin "$bin/llama-server" -m "$1" -c "$2" -np 1 -t 2 -ctk f32 -ctv f32 --port "$port" \
    >"$work/server.log" 2>&1 &
  pid=$!
  wait_ready "localhost:$port/health" "$pid" || { tail -20 "$work/server.log"; exit 1; }
  python3 - "$port" <<'PY'
import json, sys, urllib.request
body = {"prompt": [1, 40, 41, 42, 43, 44, 45], "n_predict": 16, "n_probs": 10, "temperature": 0, "top_k": 1,
        "ignore_eos": True, "cache_prompt": False, "post_sampling_probs": False,
        "logit_bias": [[i, False] for i in range(3, 259)]}
req = urllib.request.Request(f"http://localhost:{sys.argv[1]}/completion", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
for s in json.load(urllib.request.urlopen(req))["completion_probabilities"]:
    print(s["id"], " ".join(f"{t['id']}:{t['logprob']:.5f}" for t in s["top_logprobs"]))
PY
  stop "$pid"; pid=
}
for name in "${names[@]}"; do
  ref=$here/tests/data/arch_ref_${name}_f32.txt
  args=$(sed -n 's/^model //p' "$ref")
  context=$(sed -n 's/^context //p' "$ref")
  # shellcheck disable=SC2086
  "$llmserve" make-model $args "$work/$name.gguf" >/dev/null 2>&1
  # shellcheck disable=SC2086
  "$llmserve" make-model $args --format hf "$work/$name" >/dev/null 2>&1
  "$llmserve" convert --from hf "$work/$name" "$work/$name-converted.gguf" --vocab-from "$work/$name.gguf" >/dev/null
  answer "$work/$name.gguf" "$context" >"$work/a.txt"
  answer "$work/$name-converted.gguf" "$context" >"$work/b.txt"
  arch=$(python3 -c "import json; print(json.load(open('$work/$name/config.json'))['architectures'][0])")
  if cmp -s "$work/a.txt" "$work/b.txt"; then
    echo "$name ($arch): llama.cpp loads the converted directory; 16 greedy steps and top-10 identical"
  else
    echo "$name ($arch): llama.cpp's answers differ"; diff "$work/a.txt" "$work/b.txt" | head; exit 1
  fi
  rm -rf "${work:?}/$name" "$work/$name"*.gguf
done
