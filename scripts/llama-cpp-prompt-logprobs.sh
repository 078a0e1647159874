#!/usr/bin/env bash
# Reference prompt log-probabilities from llama.cpp's llama-server, for the echo +
# logprobs test (tests/server_prompt_logprobs_test.cc): for each text, its tokens
# (llama-server's /tokenize, BOS included) and, for every token after the first, its
# log-probability given the tokens before it and the top 3 alternatives — read from
# /completion with n_probs over the whole vocabulary (n_probs = n_vocab,
# post_sampling_probs false: a log-softmax of the raw logits), one request per prefix.
# F32 KV cache, one thread.
#   scripts/llama-cpp-prompt-logprobs.sh [MODEL.gguf [OUT.json]]
# Default: stories260K → tests/data/prompt_logprobs_stories260K.json
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
model=${1:-$here/../shared/models/stories260K.gguf}
out=${2:-$here/tests/data/prompt_logprobs_stories260K.json}
port=18861
log=$(mktemp)
pid=
trap 'if [ -n "$pid" ]; then stop $pid; fi; rm -f "$log"' EXIT
reference_server "$model" $port "$log" || exit 1
python3 - "$port" "$out" <<'PY'
import json, sys, urllib.request
url, out = f"http://localhost:{sys.argv[1]}", sys.argv[2]
def post(path, body):
    headers = {"Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url + path, json.dumps(body).encode(), headers)) as r:
        return json.load(r)
n_vocab = post("/completion", {"prompt": "a", "n_predict": 1, "n_probs": 100000, "temperature": 0,
                               "post_sampling_probs": False})["completion_probabilities"][0]["top_logprobs"]
n_vocab = len(n_vocab)
texts = [
    "Once upon a time, there was a little girl named Lily.",
    "The cat sat on the mat. It was happy and warm.",
    "Tom and his mom went to the park. They saw a big red ball and a dog that liked to run. "
    "Tom threw the ball and the dog ran after it. Mom laughed and said, \"Good dog!\"",
    "zebra quantum xylophone",
]
cases = []
for text in texts:
    tokens = post("/tokenize", {"content": text, "add_special": True})["tokens"]
    logprobs, top = [None], [None]
    for i in range(1, len(tokens)):
        r = post("/completion", {"prompt": tokens[:i], "n_predict": 1, "n_probs": n_vocab, "temperature": 0,
                                 "post_sampling_probs": False, "cache_prompt": True})
        dist = r["completion_probabilities"][0]["top_logprobs"]
        assert len(dist) == n_vocab, len(dist)
        by_id = {d["id"]: d["logprob"] for d in dist}
        logprobs.append(by_id[tokens[i]])
        top.append([[d["id"], d["logprob"]] for d in sorted(dist, key=lambda d: -d["logprob"])[:3]])
    cases.append({"text": text, "tokens": tokens, "logprobs": logprobs, "top3": top})
with open(out, "w") as f:
    json.dump({"model": "stories260K.gguf", "source": "llama-server /completion n_probs (full vocabulary), "
               "F32 KV cache", "n_vocab": n_vocab, "cases": cases}, f, indent=1)
print(f"{out}: {len(cases)} texts, {sum(len(c['tokens']) - 1 for c in cases)} scored tokens")
PY
