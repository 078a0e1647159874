#!/usr/bin/env bash
# Prefix clustering against first come, first served, on a shared-prefix workload:
# N system prompts shared round robin by the requests (so consecutive arrivals
# alternate prefixes), a KV pool sized to hold only two prompts' worth of blocks, and
# Poisson arrivals. Reports the prompt tokens the server computed (its
# llmserve_prefill_tokens_computed_total), TTFT p50/p99 and, for fairness (what the
# reordering costs the requests it passes over), the largest TTFT.
#
#   scripts/bench-prefix-clustering.sh MODEL.gguf [--requests 256] [--prefixes 8]
#       [--prefix-len 200] [--input-len 20] [--output-len 16] [--rate 4] [--rounds 2]
#
# --prefix-len and --input-len are in words of bench serve's shared-prefix dataset;
# the script reports the tokens they made (200 and 20 words are about 530 tokens with
# the generated llama vocabulary). Rounds alternate the two settings, each on a
# freshly started server.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
model=${1:?usage: bench-prefix-clustering.sh MODEL.gguf [options]}
shift
requests=256 prefixes=8 prefix_len=200 input_len=20 output_len=16 rate=4 rounds=2
while [[ $# -gt 0 ]]; do
  case $1 in
    --requests) requests=$2 ;;
    --prefixes) prefixes=$2 ;;
    --prefix-len) prefix_len=$2 ;;
    --input-len) input_len=$2 ;;
    --output-len) output_len=$2 ;;
    --rate) rate=$2 ;;
    --rounds) rounds=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -f $model ]] || { echo "no model file $model" >&2; exit 2; }
work=$(mktemp -d)
pid=
cleanup() {
  [[ -n $pid ]] && stop "$pid"
  rm -rf "$work"
}
trap cleanup EXIT
port=18951
url=http://127.0.0.1:$port
dataset=(--dataset shared-prefix --num-prefixes "$prefixes" --prefix-len "$prefix_len" --input-len "$input_len"
         --output-len "$output_len" --ignore-eos)

serve() {  # ARGS...
  "$llmserve" serve -m "$model" --port "$port" --threads "$(nproc)" "$@" >"$work/server.log" 2>&1 &
  pid=$!
  wait_ready "$url/ready" "$pid" || { tail -5 "$work/server.log"; exit 1; }
}
metric() {  # NAME [LABEL-FILTER]: the sum of its samples on /metrics
  curl -sf "$url/metrics" | python3 -c '
import re, sys
name, filt = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
total = 0.0
for line in sys.stdin:
    m = re.match(r"([a-zA-Z_:]+)(\{[^}]*\})?\s+(\S+)", line)
    if m and m.group(1) == name and filt in (m.group(2) or ""):
        total += float(m.group(3))
print(total)' "$@"
}

# Calibration on a default server: the tokens a request's prompt makes, and the bytes
# of one KV block.
serve --prefix-cache false
"$llmserve" bench serve --base-url "$url" "${dataset[@]}" --num-prompts 1 >"$work/calibration.log" 2>&1 ||
  { echo "the calibration request failed:" >&2; tail -3 "$work/calibration.log" >&2; exit 1; }
prompt_tokens=$(metric llmserve_prompt_tokens_total)
block_bytes=$(python3 -c "print(int($(metric llmserve_memory_bytes kv_reserved) / $(metric llmserve_kv_blocks)))")
stop "$pid"; pid=
# Two prompts' worth: two sequences of prompt + output tokens, in blocks of 16.
kv_bytes=$(python3 -c "import math; print(2 * math.ceil(($prompt_tokens + $output_len) / 16) * $block_bytes)")
echo "prompt: $prompt_tokens tokens; KV block: $block_bytes bytes; pool: $kv_bytes bytes (2 prompts)" >&2

results=$work/results.jsonl
for ((round = 0; round < rounds; round++)); do
  for setting in clustering fcfs; do
    [[ $setting == clustering ]] && flag=true || flag=false
    echo "== round $round: $setting" >&2
    # Requests queue rather than being refused while the small pool is full.
    serve --kv-cache-memory "$kv_bytes" --prefix-clustering "$flag" --max-running 64 --kv-high-watermark 1 \
      --kv-low-watermark 1
    before=$(metric llmserve_prefill_tokens_computed_total)
    "$llmserve" bench serve --base-url "$url" "${dataset[@]}" --num-prompts "$requests" --request-rate "$rate" \
      --seed "$round" --save-result "$work/$setting-$round.json" >"$work/$setting-$round.log" 2>&1 ||
      { tail -5 "$work/$setting-$round.log"; exit 1; }
    after=$(metric llmserve_prefill_tokens_computed_total)
    preempted=$(metric llmserve_preemptions_total)
    stop "$pid"; pid=
    python3 - "$work/$setting-$round.json" "$setting" "$round" "$before" "$after" "$preempted" >>"$results" <<'PY'
import json, sys
path, setting, rnd, before, after, preempted = sys.argv[1:]
r = json.load(open(path))
print(json.dumps({"setting": setting, "round": int(rnd), "prefill_tokens": float(after) - float(before),
                  "p50_ttft_ms": r["median_ttft_ms"], "p99_ttft_ms": r["p99_ttft_ms"], "max_ttft_ms": max(r["ttfts"]) * 1e3 if r.get("ttfts") else None,
                  "mean_e2el_ms": r["mean_e2el_ms"], "completed": r["completed"], "failed": r["failed"],
                  "preemptions": float(preempted), "throughput": r["request_throughput"],
                  "errors": r.get("errors", [])[:1]}))
PY
  done
done

python3 - "$results" "$prompt_tokens" "$requests" "$prefixes" "$rate" "$(basename "$model")" <<'PY'
import json, sys
results, prompt_tokens, requests, prefixes, rate, model = sys.argv[1:]
rows = [json.loads(l) for l in open(results)]
print(f"{model}: {requests} requests over {prefixes} shared prefixes, prompts of {float(prompt_tokens):.0f} tokens, "
      f"Poisson {rate} req/s, KV pool of 2 prompts\n")
print("| setting | round | prompt tokens computed | TTFT p50 (ms) | TTFT p99 (ms) | TTFT max (ms) | req/s | preemptions | failed |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    mx = f"{r['max_ttft_ms']:.0f}" if r["max_ttft_ms"] is not None else "-"
    print(f"| {r['setting']} | {r['round']} | {r['prefill_tokens']:.0f} | {r['p50_ttft_ms']:.0f} | {r['p99_ttft_ms']:.0f} | "
          f"{mx} | {r['throughput']:.2f} | {r['preemptions']:.0f} | {r['failed']} {r['errors']} |")
PY
