#!/usr/bin/env bash
# Installs what llmserve needs, builds it (release) and runs the demo: the
# OpenAI-compatible server on a model, one chat request with curl, the answer and the
# first lines of /metrics, then a graceful stop. With no argument it uses
# ../shared/models/stories260K.gguf when present, else it generates a small synthetic
# model (random weights) and says so.
#   scripts/setup-and-demo.sh [MODEL.gguf]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
install_deps

cmake --preset release >/dev/null
cmake --build --preset release --target llmserve

BIN=build/release/src/cli/llmserve
MODEL="${1:-}"
if [ -z "$MODEL" ]; then
  if [ -f ../shared/models/stories260K.gguf ]; then
    MODEL=../shared/models/stories260K.gguf
  else
    MODEL=build/release/demo-synthetic.gguf
    echo "No model given and ../shared/models/stories260K.gguf is absent:"
    echo "generating a small SYNTHETIC model with RANDOM weights at $MODEL (its text is noise)."
    "$BIN" make-model --preset tiny "$MODEL"
  fi
fi

LOG=build/release/demo-server.log
echo "== llmserve serve -m $MODEL --port 0 (any free port)"
"$BIN" serve -m "$MODEL" --port 0 >"$LOG" 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null || true' EXIT

URL=""
for _ in $(seq 1 600); do
  URL=$(sed -n 's/^llmserve: serving .* on \(http:[^ ]*\)$/\1/p' "$LOG")
  [ -n "$URL" ] && curl -sf "$URL/ready" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { cat "$LOG"; echo "the server did not start"; exit 1; }
  sleep 0.1
done
echo "== ready at $URL: $(curl -s "$URL/ready")"

REQUEST='{"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 64, "temperature": 0}'
echo "== POST $URL/v1/chat/completions $REQUEST"
RESPONSE=$(curl -s "$URL/v1/chat/completions" -H 'Content-Type: application/json' -d "$REQUEST")
echo "$RESPONSE"
echo "== answer:"
echo "$RESPONSE" | sed -n 's/.*"content":"\(\([^"\\]\|\\.\)*\)".*/\1/p' | sed 's/\\n/\n/g; s/\\"/"/g'

echo "== first lines of $URL/metrics (histogram buckets left out):"
METRICS=$(curl -s "$URL/metrics")
echo "$METRICS" | grep -v -e '^#' -e '_bucket{' | head -n 20 || true

echo "== the dashboard: $URL/ ($(curl -s -o /dev/null -w '%{http_code}, %{size_download} bytes' "$URL/")); its data:"
curl -s "$URL/v1/stats" | head -c 300 && echo " ..."

echo "== stopping the server (SIGTERM)"
kill -TERM $SERVER
trap - EXIT
wait $SERVER && echo "server exited cleanly" || { echo "server exit status $?"; exit 1; }
