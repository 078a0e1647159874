#!/usr/bin/env bash
# Batched serving on one model file, three ways, interleaved round by round:
#   1. the engine in-process (`llmserve bench-engine --profile`: tok/s, the step
#      profile and the share of the compute limit measured in the same run);
#   2. `llmserve serve` over HTTP, driven by `llmserve bench serve` (32 streams);
#   3. llama.cpp's llama-server on the same file and load (--parallel 32, continuous
#      batching), driven by the same client.
#   scripts/bench-batched.sh MODEL.gguf [ROUNDS]
# Environment: THREADS (2), CONC (32 concurrent requests), REQUESTS (64), OUT (64
# tokens each), WORDS (16 prompt words over HTTP), BATCH (llama-server -b, 512),
# UBATCH (-ub, 512), PORT (18471; llama-server takes PORT + round), KV (the KV cache
# type of all three, f16; another type runs llama-server with -fa, which its quantized
# V cache needs).
# llama-server gets an HTTP thread per stream and some (--threads-http): with its
# default, a few of 32 streams failed with the connection closed unanswered.
# Needs build/release/src/cli/llmserve and ../shared/peers/llama.cpp/bin/llama-server.
set -euo pipefail
model=${1:?usage: bench-batched.sh MODEL.gguf [ROUNDS]}
rounds=${2:-1}
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
peer_dir=${LLAMA_DIR:-$here/../shared/peers/llama.cpp/bin}
threads=${THREADS:-2}
conc=${CONC:-32}
requests=${REQUESTS:-64}
out=${OUT:-64}
words=${WORDS:-16}
batch=${BATCH:-512}
ubatch=${UBATCH:-512}
port=${PORT:-18471}
kv=${KV:-f16}
peer_kv=(-ctk "$kv" -ctv "$kv")
[ "$kv" = f16 ] || peer_kv+=(-fa)
ctx=$((conc * 256))

source "$here/scripts/server-lib.sh"

wait_port_free() {  # PORT: a server from an earlier run may still hold it
  for _ in $(seq 1 100); do
    ss -ltn | grep -q ":$1 " || return 0
    sleep 0.2
  done
  echo "port $1 is still in use" >&2
  return 1
}

client() {  # NAME SEED PORT: one bench-serve run against the server on PORT
  local name=$1 seed=$2 port=$3 json
  json=$(mktemp /tmp/bench-batched.XXXXXX.json)
  "$llmserve" bench serve --base-url "http://127.0.0.1:$port" --num-prompts "$requests" --max-concurrency "$conc" \
    --input-len "$words" --output-len "$out" --ignore-eos --warmup 4 --seed "$seed" --save-result "$json" >/dev/null
  python3 - "$name" "$json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]:<22} completed {r['completed']:>4}  failed {r['failed']:>3}  out tok/s {r['output_throughput']:8.1f}  "
      f"TTFT p50 {r['median_ttft_ms']:8.1f} ms  p90 {r.get('p90_ttft_ms', float('nan')):8.1f} ms  "
      f"TPOT p50 {r['median_tpot_ms']:7.2f} ms  prompt tokens {r['total_input_tokens']}")
EOF
  rm -f "$json" "${json%.json}.md"
}

for round in $(seq 1 "$rounds"); do
  echo "== round $round: $model, $threads threads, $conc concurrent, $requests requests x $out tokens, KV $kv"
  "$llmserve" bench-engine -m "$model" --batching continuous --requests "$requests" --concurrency "$conc" \
    --prompt-min 24 --prompt-max 40 --output-min "$out" --output-max "$out" -t "$threads" --kv-type "$kv" --profile 2>/dev/null

  wait_port_free "$port"
  "$llmserve" serve -m "$model" --port "$port" --threads "$threads" --kv-type "$kv" --result-cache-bytes 0 \
    >/tmp/bench-batched-llmserve.log 2>&1 &
  pid=$!
  wait_ready "http://127.0.0.1:$port/health" "$pid" || { cat /tmp/bench-batched-llmserve.log; exit 1; }
  client "llmserve (HTTP)" "$round" "$port"
  stop "$pid"

  # A port of its own per round: llama-server's closed connections linger in TIME_WAIT
  # without SO_REUSEADDR, which blocks a new listener on their port for a minute.
  peer_port=$((port + round))
  wait_port_free "$peer_port"
  LD_LIBRARY_PATH=$peer_dir "$peer_dir/llama-server" -m "$model" -c "$ctx" -t "$threads" --parallel "$conc" \
    --cont-batching -b "$batch" -ub "$ubatch" "${peer_kv[@]}" --threads-http $((conc + 8)) --port "$peer_port" >/tmp/bench-batched-llama.log 2>&1 &
  pid=$!
  wait_ready "http://127.0.0.1:$peer_port/health" "$pid" || { cat /tmp/bench-batched-llama.log; exit 1; }
  client "llama-server -b $batch -ub $ubatch" "$round" "$peer_port"
  stop "$pid"
done
