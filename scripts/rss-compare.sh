#!/usr/bin/env bash
# Memory of `llmserve serve` and llama.cpp's llama-server side by side on one model
# file: each is started, serves one completion, and its /proc status is read.
#   scripts/rss-compare.sh MODEL.gguf [ROUNDS]
# Prints, per server and round: RSS after one request (VmRSS), its anonymous and file
# parts, and the peak during load and the request (VmHWM), in MiB.
# Needs build/release/src/cli/llmserve and ../shared/peers/llama.cpp/bin/llama-server.
set -euo pipefail
model=${1:?usage: rss-compare.sh MODEL.gguf [ROUNDS]}
rounds=${2:-1}
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
peer=${LLAMA_SERVER:-$here/../shared/peers/llama.cpp/bin/llama-server}
ctx=${CTX:-2048}
threads=${THREADS:-2}
port=${PORT:-18391}
prompt='Once upon a time there was a small village by the sea, and in the village lived'

status_mib() {  # PID FIELD
  awk -v f="$2:" '$1 == f { printf "%.0f", $2 / 1024 }' "/proc/$1/status"
}

source "$here/scripts/server-lib.sh"

measure() {  # NAME PID COMPLETION_URL BODY
  local name=$1 pid=$2 url=$3 body=$4
  curl -sf -X POST -H 'Content-Type: application/json' -d "$body" "$url" >/dev/null
  printf '%-10s rss %6s MiB  (anon %6s, file %6s)  peak %6s MiB\n' "$name" "$(status_mib "$pid" VmRSS)" \
    "$(status_mib "$pid" RssAnon)" "$(status_mib "$pid" RssFile)" "$(status_mib "$pid" VmHWM)"
}

for round in $(seq 1 "$rounds"); do
  echo "round $round: $model, context $ctx, $threads threads"
  "$llmserve" serve -m "$model" --port "$port" --threads "$threads" --context-length "$ctx" >/tmp/rss-llmserve.log 2>&1 &
  pid=$!
  wait_ready "http://127.0.0.1:$port/health" "$pid" || { cat /tmp/rss-llmserve.log; exit 1; }
  measure llmserve "$pid" "http://127.0.0.1:$port/v1/completions" \
    "{\"prompt\": \"$prompt\", \"max_tokens\": 32, \"temperature\": 0}"
  stop "$pid"

  "$peer" -m "$model" -c "$ctx" -t "$threads" --port "$port" >/tmp/rss-llama-server.log 2>&1 &
  pid=$!
  wait_ready "http://127.0.0.1:$port/health" "$pid" || { cat /tmp/rss-llama-server.log; exit 1; }
  measure llama.cpp "$pid" "http://127.0.0.1:$port/completion" \
    "{\"prompt\": \"$prompt\", \"n_predict\": 32, \"temperature\": 0}"
  stop "$pid"
done
