#!/usr/bin/env bash
# The official OpenAI Node SDK against `llmserve serve` on stories260K: response_format
# json_schema, tools with tool_choice "required", a streamed tool call
# (tests/sdk/openai_sdk_check.mjs); then embeddings, the Responses API (create, json
# schema, a function tool round trip, stream), chat with continue_final_message, and
# Anthropic's SDK on /v1/messages with a streamed tool call (tests/sdk/client_apis_check.mjs).
# Needs node (20+) and npm with access to the npm registry (the SDKs are installed into
# tests/sdk).
#   scripts/sdk-openai-check.sh [MODEL.gguf]   (default ../shared/models/stories260K.gguf)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:-../shared/models/stories260K.gguf}"
cmake --preset release >/dev/null
cmake --build --preset release --target llmserve
(cd tests/sdk && npm install --no-audit --no-fund)

LOG="$(mktemp)"
build/release/src/cli/llmserve serve -m "$MODEL" --port 0 >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -f "$LOG"' EXIT
# The server prints its address once it listens; wait up to 60 s for it.
URL=""
for _ in $(seq 600); do
  URL="$(grep -o 'http://127.0.0.1:[0-9]*' "$LOG" | head -1 || true)"
  [[ -n "$URL" ]] && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
[[ -n "$URL" ]] || { echo "the server did not start:"; cat "$LOG"; exit 1; }
status=0
LLMSERVE_URL="$URL/v1" node tests/sdk/openai_sdk_check.mjs || status=1
LLMSERVE_URL="$URL/v1" node tests/sdk/client_apis_check.mjs || status=1
exit $status
