#!/usr/bin/env bash
# What serving LoRA adapters costs (issue 59's speed criterion): one server of a
# llama-110m-shaped Q8_0 model with 8 rank-16 adapters on every projection (attn_q,
# attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down) written in each factor
# type asked for (F32 and F16 by default: 16 adapters on one server); 32 concurrent
# requests x 64 tokens spread over one type's 8 adapters (8 `bench serve` clients of 4
# each, one adapter per client) against the same 32 x 64 on the base model, the kinds
# of run interleaved on the same server (base, then each type, every round). Prints
# each run with the adapters' share of its profiled step time
# (llmserve_step_part_seconds_total{part="lora"}), the medians and their ratios
# (adapters / base).
#
#   bench/lora_overhead.sh [ROUNDS=3] [PRESET=llama-110m] [TYPE=q8_0] [THREADS=0] [LORA_TYPES="f32 f16"]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
rounds=${1:-3}
preset=${2:-llama-110m}
type=${3:-q8_0}
threads=${4:-0}
read -r -a lora_types <<<"${5:-f32 f16}"
port=${PORT:-18160}
adapters=8
work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
model=$work/model.gguf
lora_flags=()
for lt in "${lora_types[@]}"; do
  make_flags=()
  for i in $(seq 0 $((adapters - 1))); do  # seeds 1..8, the same values rounded to each type
    make_flags+=(--lora "$work/$lt-lora$i.gguf")
    lora_flags+=(--lora "$lt-tune$i=$work/$lt-lora$i.gguf")
  done
  "$llmserve" make-model --preset "$preset" --type "$type" "$model" --lora-rank 16 --lora-seed 1 --lora-type "$lt" \
    "${make_flags[@]}" >/dev/null 2>&1
done

"$llmserve" serve --port "$port" -m "$model" --model-name base --threads "$threads" --result-cache-bytes 0 \
  --profile-steps "${lora_flags[@]}" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 240); do curl -sf "localhost:$port/ready" >/dev/null && break; sleep 0.5; done
curl -sf "localhost:$port/ready" >/dev/null || { cat "$work/server.log"; exit 1; }

lora_seconds() {  # the step profile's adapter and whole-step seconds so far
  curl -s "localhost:$port/metrics" | awk '/^llmserve_step_part_seconds_total/ {
    if ($0 ~ /part="lora"/) l += $NF; else if ($0 !~ /part="pool_wait"/) t += $NF } END { printf "%.6f %.6f\n", l, t }'
}

run_one() {  # $1: base or a factor type; 8 clients x 4 concurrent x 8 requests of 64 tokens
  local kind=$1 pids=() i model before after
  before=$(lora_seconds)
  for i in $(seq 0 $((adapters - 1))); do
    model=base
    [[ $kind != base ]] && model=$kind-tune$i
    "$llmserve" bench serve --base-url "http://127.0.0.1:$port" --model "$model" --num-prompts 32 \
      --max-concurrency 4 --input-len 32 --output-len 64 --ignore-eos --warmup 1 --seed $((i + 1)) \
      --save-result "$work/$kind$i.json" >/dev/null 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  after=$(lora_seconds)
  python3 - "$kind" "$work" "$adapters" "$before" "$after" <<'PY'
import json, sys
kind, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [json.load(open(f"{work}/{kind}{i}.json")) for i in range(n)]
tokens = sum(r["total_output_tokens"] for r in runs)
l0, t0 = map(float, sys.argv[4].split())
l1, t1 = map(float, sys.argv[5].split())
share = (l1 - l0) / (t1 - t0) if t1 > t0 else 0.0
print(kind, "%.1f" % (tokens / max(r["duration"] for r in runs)), "%.1f" % (100 * share))
PY
}

for r in $(seq "$rounds"); do
  run_one base
  for lt in "${lora_types[@]}"; do run_one "$lt"; done
done | tee "$work/all.txt"
python3 - "$work/all.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
kinds = list(dict.fromkeys(r[0] for r in rows))
med = {k: statistics.median(float(t) for w, t, _ in rows if w == k) for k in kinds}
share = {k: statistics.median(float(s) for w, _, s in rows if w == k) for k in kinds}
print(f"base {med['base']:.1f} tok/s")
for k in kinds[1:]:
    print(f"8 {k} adapters {med[k]:.1f} tok/s, adapters / base = {med[k] / med['base']:.2f}; "
          f"the adapters' products {share[k]:.1f}% of the profiled step time (median of runs)")
PY
