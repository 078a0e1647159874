#!/usr/bin/env bash
# kill -9 during deploys: runs N deploys (default 20) of a model into a fresh model
# root, each killed with SIGKILL after a random delay, and after each restarts a
# server on the root: it must come up on a complete version and answer a request.
#   scripts/deploy-kill-check.sh [N] [MODEL.gguf]
# Without MODEL it makes a 110M-parameter synthetic Q8_0 model (~120 MB: its copy
# takes long enough for the kills to land inside it).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-20}"
cmake --preset release >/dev/null
cmake --build --preset release --target llmserve >/dev/null
BIN=build/release/src/cli/llmserve
WORK=$(mktemp -d)
trap 'pkill -9 -f "serve --model-root $WORK/root" 2>/dev/null || true; rm -rf "$WORK"' EXIT
MODEL="${2:-$WORK/model.gguf}"
[ -f "$MODEL" ] || "$BIN" make-model --preset llama-110m --type q8_0 "$MODEL" >/dev/null
"$BIN" deploy --root "$WORK/root" --version v0 --from "$MODEL" >/dev/null
SIZE=$(stat -c %s "$MODEL")
PORT=18431
served=0
for i in $(seq 1 "$N"); do
  "$BIN" deploy --root "$WORK/root" --version "v$i" --from "$MODEL" >/dev/null 2>&1 &
  pid=$!
  sleep "0.$(printf '%03d' $((RANDOM % 400)))"
  kill -9 "$pid" 2>/dev/null && killed=yes || killed="no (done)"
  wait "$pid" 2>/dev/null || true
  cur=$(readlink "$WORK/root/current")
  size=$(stat -c %s "$WORK/root/$cur/model.gguf")
  [ "$size" = "$SIZE" ] || { echo "deploy $i: current -> $cur holds $size of $SIZE bytes"; exit 1; }
  "$BIN" serve --model-root "$WORK/root" --port "$PORT" --threads 1 >"$WORK/serve.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$PORT/ready" >/dev/null && break; sleep 0.1; done
  answer=$(curl -sf "http://127.0.0.1:$PORT/v1/completions" -H 'Content-Type: application/json' -d '{"prompt": "Hello", "max_tokens": 2}' \
           -D - -o /dev/null | tr -d '\r' | sed -n 's/^x-llmserve-model-version: //Ip')
  kill "$spid"; wait "$spid" || true
  [ -n "$answer" ] || { echo "deploy $i: the restarted server did not answer"; cat "$WORK/serve.log"; exit 1; }
  served=$((served + 1))
  echo "deploy $i: killed: $killed; current -> $cur (complete); restarted server answered as $answer"
done
echo "deploy-kill-check: $served of $N restarts served a complete version"
