#!/usr/bin/env bash
# Tensor parallelism's overhead on one machine: `mpirun -np 2 ... --tensor-parallel 2
# --threads 1` against one process `--threads 2` on the same cores and bandwidth,
# rounds interleaved. Single-stream decode (1 request at a time, 128 tokens), batched
# serving (32 concurrent x 64 tokens) and prefill (one request at a time, 200-word (~480-token)
# prompts, 1 token out: prompt tokens per second), llama-110m-shaped Q8_0 by default.
# GROUPS picks the groups measured against the one process: tp2 (--tensor-parallel 2),
# pp2 (--pipeline-parallel 2), or both ("tp2 pp2").
#
#   bench/tensor_parallel_overhead.sh [ROUNDS=3] [PRESET=llama-110m] [TYPE=q8_0] [GROUPS=tp2]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
rounds=${1:-3}
preset=${2:-llama-110m}
type=${3:-q8_0}
groups=${4:-tp2}
work=$(mktemp -d)
trap 'pkill -f "serve --port 18150" 2>/dev/null || true; rm -rf "$work"' EXIT
model=$work/model.gguf
"$llmserve" make-model --preset "$preset" --type "$type" "$model" >/dev/null 2>&1
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to core)

run_one() {  # $1: label; the rest: the command that serves on port 18150
  local label=$1
  shift
  "$@" >"$work/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 120); do curl -sf localhost:18150/ready >/dev/null && break; sleep 0.5; done
  for shape in "decode 8 1 32 128" "batch 64 32 32 64" "prefill 8 1 200 1"; do
    read -r name prompts conc in out <<<"$shape"
    "$llmserve" bench serve --base-url http://127.0.0.1:18150 --num-prompts "$prompts" --max-concurrency "$conc" \
      --input-len "$in" --output-len "$out" --ignore-eos --warmup 2 --save-result "$work/r.json" >/dev/null 2>&1
    python3 -c "import json,sys; r=json.load(open('$work/r.json')); \
tps = r['total_input_tokens'] / r['duration'] if '$name' == 'prefill' else r['output_throughput']; \
print('$label', '$name', '%.1f' % tps)"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

for r in $(seq "$rounds"); do
  run_one one "$llmserve" serve --port 18150 -m "$model" --threads 2 --no-warmup-pass
  for g in $groups; do
    case $g in
      tp2) flag=--tensor-parallel ;;
      pp2) flag=--pipeline-parallel ;;
      *) echo "unknown group $g (tp2 or pp2)" >&2; exit 2 ;;
    esac
    run_one "$g" "${mpirun[@]}" -np 2 "$llmserve" serve --port 18150 -m "$model" --threads 1 $flag 2 --no-warmup-pass
  done
done | tee "$work/all.txt"
python3 - "$work/all.txt" $groups <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for g in sys.argv[2:]:
    for shape in ("decode", "batch", "prefill"):
        med = {who: statistics.median(float(t) for w, s, t in rows if w == who and s == shape) for who in ("one", g)}
        name = g.upper().replace("2", "-2")
        print(f"{shape}: one process {med['one']:.1f} tok/s, {name} {med[g]:.1f} tok/s, {name} / one = {med[g] / med['one']:.2f}")
PY
