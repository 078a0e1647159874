#!/bin/bash
# What cross-scoring costs served traffic (docs/benchmarks.md): a server on a model root
# with a Q8_0 canary of stories260K taking 50%, `llmserve bench serve` at a saturating
# load, quality_sample_share 0.25 (the default) against 0, the two servers started
# alternately, one run of each per seed. Run from the repository root after a release build.
set -e
B=build/release/src/cli/llmserve
MODEL=../shared/models/stories260K.gguf
W=${TMPDIR:-/tmp}/quality_scoring_cost; rm -rf "$W"; mkdir -p "$W"
PORT=${PORT:-18477}
echo "a-token-of-twenty-chars" > "$W/token"
$B quantize "$MODEL" "$W/q8.gguf" --type q8_0 > /dev/null
run() {  # $1 share, $2 seed
  rm -rf "$W/root"; mkdir -p "$W/root/versions/v1" "$W/root/versions/q8"
  cp "$MODEL" "$W/root/versions/v1/model.gguf"; cp "$W/q8.gguf" "$W/root/versions/q8/model.gguf"
  ln -sfn versions/v1 "$W/root/current"
  $B serve --model-root "$W/root" --admin-token-file "$W/token" --port $PORT --threads 1 --result-cache-bytes 0 \
    --quality-sample-share "$1" > "$W/server_$1_$2.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do curl -s localhost:$PORT/health > /dev/null 2>&1 && break; sleep 0.1; done
  curl -sf -X POST -H "Authorization: Bearer $(cat "$W/token")" -H "Content-Type: application/json" \
    localhost:$PORT/admin/deploy \
    -d '{"version":"q8","canary":0.5}' > /dev/null
  $B bench serve --base-url http://127.0.0.1:$PORT --num-prompts 1000 --output-len 32 --ignore-eos \
    --temperature 0.8 --warmup 5 --seed "$2" --request-rate inf --max-concurrency 8 --input-len 32 \
    --save-result "$W/share_$1_seed_$2.json" > "$W/bench_$1_$2.txt" 2>&1
  local scored
  scored=$(curl -s localhost:$PORT/metrics | grep '^llmserve_quality_scored_outputs_total' | awk '{s+=$2} END {print s+0}')
  kill $pid; wait $pid 2> /dev/null || true
  python3 -c "import json; d = json.load(open('$W/share_$1_seed_$2.json')); \
print('share=$1 seed=$2 output_throughput=%.1f tok/s completed=%d scored=$scored' % (d['output_throughput'], d['completed']))"
}
for seed in 1 2 3 4 5; do run 0.25 $seed; run 0 $seed; done
