#!/usr/bin/env bash
# Reference embeddings from llama.cpp's llama-server, for the /v1/embeddings test
# (tests/server_embeddings_test.cc): for each pooling (mean, cls, last) a server started
# with --embeddings --pooling P answers /v1/embeddings for the same texts (its default
# Euclidean normalization), and /tokenize gives each text's tokens (special tokens
# added, as its embeddings add them). F32 KV cache, one thread.
#   scripts/llama-cpp-embeddings.sh [MODEL.gguf [OUT.json]]
# Default: stories260K → tests/data/embeddings_stories260K.json
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
model=${1:-$here/../shared/models/stories260K.gguf}
out=${2:-$here/tests/data/embeddings_stories260K.json}
port=18862
log=$(mktemp)
parts=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then stop $pid; fi; rm -rf "$log" "$parts"' EXIT
for pooling in mean cls last; do
  reference_server "$model" $port "$log" --embeddings --pooling $pooling || exit 1
  python3 - "$port" "$parts/$pooling.json" <<'PY'
import json, sys, urllib.request
url, out = f"http://localhost:{sys.argv[1]}", sys.argv[2]
def post(path, body):
    headers = {"Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url + path, json.dumps(body).encode(), headers)) as r:
        return json.load(r)
texts = [
    "Once upon a time, there was a little girl named Lily.",
    "The cat sat on the mat. It was happy and warm.",
    "Tom and his mom went to the park. They saw a big red ball and a dog that liked to run. "
    "Tom threw the ball and the dog ran after it. Mom laughed and said, \"Good dog!\"",
    "zebra quantum xylophone",
    "Hi",
]
data = post("/v1/embeddings", {"input": texts, "encoding_format": "float"})["data"]
cases = []
for text, d in zip(texts, sorted(data, key=lambda d: d["index"])):
    tokens = post("/tokenize", {"content": text, "add_special": True})["tokens"]
    cases.append({"text": text, "tokens": tokens, "embedding": d["embedding"]})
json.dump(cases, open(out, "w"))
PY
  stop $pid
  pid=
done
python3 - "$parts" "$out" <<'PY'
import json, sys
parts, out = sys.argv[1], sys.argv[2]
poolings = {p: json.load(open(f"{parts}/{p}.json")) for p in ("mean", "cls", "last")}
with open(out, "w") as f:
    json.dump({"model": "stories260K.gguf",
               "source": "llama-server --embeddings --pooling P, /v1/embeddings (normalized), F32 KV cache",
               "poolings": poolings}, f, indent=1)
print(f"{out}: {sum(len(c) for c in poolings.values())} embeddings")
PY
