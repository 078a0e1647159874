#!/usr/bin/env bash
# The SLO goodput benchmark: open-loop Poisson load at several rates, from light to
# overload, against `llmserve serve` run with the auto-tuner and with each of a sweep
# of fixed step token budgets. Goodput is the output tokens per second of requests that
# met both latency targets (TTFT and TPOT, as `bench serve --goodput` judges them).
#
#   scripts/bench-slo.sh MODEL.gguf [--rates 2,4,8,12,16] [--ttft-ms 1000] [--itl-ms 50]
#       [--budgets 32,64,128,256,512] [--running-caps 64] [--input-len 32] [--output-len 64]
#       [--seconds 20]
#       [--batching continuous|dynamic] [--sizes 1,2,4,8,16] [--in-process] [--out DIR]
#       [--shed none|tuner|all] [--repeat 1] [--slo-percentile 0.99]
#
# --shed: which settings run with `--slo-shed` (queued requests forecast to miss the
# TTFT target are refused): none (default), the tuner only, or every setting.
#
# --slo-percentile P: the share of a request's inter-token intervals the ITL target
# holds for, given to every setting (`serve --slo-percentile`): it is the percentile
# the tuner holds its steps at, and the engine's own SLO rule. 0.5 aims the tuner at
# the typical interval, as the TPOT rule (each request's mean interval) judges.
#
# --repeat N: each setting runs N times at each rate (the rounds interleaved, each
# with its own arrivals); the tables give the median of the N runs.
#
# --in-process: the load runs inside the engine (`llmserve bench-engine --request-rate`,
# prompts of exactly --input-len tokens) instead of over HTTP, so that no client shares
# the cores with the server; the same settings and goodput rule.
#
# Settings run interleaved: for each rate, every setting in turn (the order rotated from
# rate to rate), each on a freshly started server, so that a drift of the machine's
# speed falls on all of them. The fixed settings are every budget with every running
# cap; the tuner gets the largest of each as its bounds and the smallest budget as its
# floor. With --batching dynamic the sweep is over
# max_batch_size (--sizes, max_delay_ms 20) and the tuner is the batch tuner.
# Prints a markdown table (goodput per setting and rate, the tuner against the best
# fixed setting) and writes it with the raw results (results.jsonl) to --out.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
model=${1:?usage: bench-slo.sh MODEL.gguf [options]}
shift
rates=2,4,8,12,16 ttft=1000 itl=50 budgets=32,64,128,256,512 caps=64 sizes=1,2,4,8,16 input_len=32 output_len=64
seconds=20 batching=continuous out= in_process=0 shed=none repeat=1 percentile=0.99
while [[ $# -gt 0 ]]; do
  case $1 in
    --in-process) in_process=1; shift; continue ;;
    --rates) rates=$2 ;;
    --ttft-ms) ttft=$2 ;;
    --itl-ms) itl=$2 ;;
    --budgets) budgets=$2 ;;
    --running-caps) caps=$2 ;;
    --sizes) sizes=$2 ;;
    --input-len) input_len=$2 ;;
    --output-len) output_len=$2 ;;
    --seconds) seconds=$2 ;;
    --batching) batching=$2 ;;
    --out) out=$2 ;;
    --shed) shed=$2 ;;
    --repeat) repeat=$2 ;;
    --slo-percentile) percentile=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -f $model ]] || { echo "no model file $model" >&2; exit 2; }
[[ $shed =~ ^(none|tuner|all)$ ]] || { echo "--shed takes none, tuner or all, not $shed" >&2; exit 2; }
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "--repeat takes a positive count, not $repeat" >&2; exit 2; }
work=$(mktemp -d)
out=${out:-$work}
mkdir -p "$out"
pid=
cleanup() {
  [[ -n $pid ]] && stop "$pid"
  [[ $out == "$work" ]] || rm -rf "$work"
}
trap cleanup EXIT
port=18941
results=$out/results.jsonl
: >"$results"

IFS=, read -r -a rate_list <<<"$rates"
slo=(--slo-ttft-ms "$ttft" --slo-itl-ms "$itl" --slo-percentile "$percentile")
settings=()
if [[ $batching == dynamic ]]; then
  IFS=, read -r -a size_list <<<"$sizes"
  top=${size_list[-1]}
  for s in "${size_list[@]}"; do settings+=("size $s|--batching dynamic --max-batch-size $s --max-delay-ms 20"); done
  settings+=("tuner|--batching dynamic --max-batch-size $top --max-delay-ms 20 --autotune on")
else
  IFS=, read -r -a budget_list <<<"$budgets"
  IFS=, read -r -a cap_list <<<"$caps"
  low=${budget_list[0]} top=${budget_list[-1]} cap=${cap_list[-1]}
  for c in "${cap_list[@]}"; do
    for b in "${budget_list[@]}"; do
      label="budget $b"
      [[ ${#cap_list[@]} -gt 1 ]] && label+=", running $c"
      settings+=("$label|--max-batch-tokens $b --max-running $c")
    done
  done
  settings+=("tuner|--max-batch-tokens $top --max-running $cap --autotune on --autotune-min-batch-tokens $low")
fi
for ((k = 0; k < ${#settings[@]}; k++)); do
  if [[ $shed == all || ($shed == tuner && ${settings[$k]} == tuner\|*) ]]; then settings[k]+=" --slo-shed"; fi
done

started=$(date +%s)
for ((r = 0; r < ${#rate_list[@]}; r++)); do
  rate=${rate_list[$r]}
  prompts=$(python3 -c "print(max(30, round($rate * $seconds)))")
  for ((round = 0; round < repeat; round++)); do
    seed=$((r + 100 * round))
    for ((k = 0; k < ${#settings[@]}; k++)); do
      IFS='|' read -r label flags <<<"${settings[$(((k + r + round) % ${#settings[@]}))]}"
      echo "== rate $rate, round $((round + 1)) of $repeat: $label" >&2
      name="r${rate}_${round}_$(echo "$label" | tr -c 'A-Za-z0-9' '_')"
      if [[ $in_process == 1 ]]; then
        policy=(--batching continuous)
        [[ $flags == *--batching* ]] && policy=()
        # shellcheck disable=SC2086
        "$llmserve" bench-engine -m "$model" "${policy[@]}" $flags "${slo[@]}" --threads "$(nproc)" --seed "$seed" \
          --requests "$prompts" --request-rate "$rate" --prompt-min "$input_len" --prompt-max "$input_len" \
          --output-min "$output_len" --output-max "$output_len" --goodput "ttft:$ttft" "tpot:$itl" --json \
          >"$work/$name.out" 2>"$work/$name.log" ||
          { echo "bench-engine failed at rate $rate, $label:" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
        python3 - "$work/$name.out" "$label" "$rate" >>"$results" <<'PY'
import json, sys
path, label, rate = sys.argv[1:]
r = json.load(open(path))[0]
print(json.dumps({"setting": label, "rate": float(rate), "goodput_tok_s": r["goodput_tokens_per_s"],
                  "output_tok_s": r["tokens_per_s"], "p99_ttft_ms": 1000 * r["ttft_p99_s"],
                  "p99_itl_ms": 1000 * r["tpot_p99_s"], "mean_tpot_ms": 1000 * r["itl_mean_s"],
                  "completed": r["completed"], "failed": r["failed"],
                  "slo_goodput_tok_s": r.get("slo_goodput_tokens_per_s", 0)}))
PY
        continue
      fi
      # shellcheck disable=SC2086
      "$llmserve" serve -m "$model" --port "$port" --threads "$(nproc)" "${slo[@]}" $flags >"$work/server.log" 2>&1 &
      pid=$!
      wait_ready "http://127.0.0.1:$port/ready" "$pid" || { tail -5 "$work/server.log" >&2; exit 1; }
      "$llmserve" bench serve --base-url "http://127.0.0.1:$port" --ignore-eos --seed "$seed" --warmup 4 \
        --num-prompts "$prompts" --request-rate "$rate" --input-len "$input_len" --output-len "$output_len" \
        --goodput "ttft:$ttft" "tpot:$itl" --save-result "$work/$name.json" >"$work/$name.log" 2>&1 ||
        { echo "bench serve failed at rate $rate, $label:" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
      grep -h "autotune (on)" "$work/server.log" | tail -1 | sed 's/^/   last decision: /' >&2 || true
      stop "$pid"; pid=
      python3 - "$work/$name.json" "$label" "$rate" "$output_len" >>"$results" <<'PY'
import json, sys
path, label, rate, output_len = sys.argv[1:]
r = json.load(open(path))
print(json.dumps({"setting": label, "rate": float(rate), "goodput_tok_s": (r.get("request_goodput") or 0) * int(output_len),
                  "output_tok_s": r["output_throughput"], "p99_ttft_ms": r["p99_ttft_ms"], "p99_itl_ms": r["p99_itl_ms"],
                  "mean_tpot_ms": r["mean_tpot_ms"], "completed": r["completed"], "failed": r["failed"]}))
PY
    done
  done
done
elapsed=$(( $(date +%s) - started ))

itl_label="p99 ITL"
[[ $in_process == 1 ]] && itl_label="p99 TPOT (in-process: per request)"
python3 - "$results" "$elapsed" "$(basename "$model")" "$ttft" "$itl" "$batching" "$itl_label" "$percentile" \
  >"$out/TABLE.md" <<'PY'
import json, sys
results, elapsed, model, ttft, itl, batching, itl_label, percentile = sys.argv[1:]
rows = [json.loads(l) for l in open(results)]
rates = sorted({r["rate"] for r in rows})
settings = list(dict.fromkeys(r["setting"] for r in rows))
# Each (setting, rate): the median of its runs, field by field.
runs = {}
for r in rows:
    runs.setdefault((r["setting"], r["rate"]), []).append(r)
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
get = {k: {f: median([x[f] for x in v]) for f in v[0] if f not in ("setting", "rate")} for k, v in runs.items()}
repeats = max(len(v) for v in runs.values())
fmt = lambda x: f"{x:g}"
def table(key):
    print("| setting | " + " | ".join(f"{fmt(r)} req/s" for r in rates) + " | sum |")
    print("|---|" + "---|" * (len(rates) + 1))
    for s in settings:
        g = [get[(s, r)].get(key, 0) for r in rates]
        print(f"| {s} | " + " | ".join(f"{x:.0f}" for x in g) + f" | {sum(g):.0f} |")
    fixed = [s for s in settings if s != "tuner"]
    best = [max(get[(s, r)].get(key, 0) for s in fixed) for r in rates]
    tuner = [get[("tuner", r)].get(key, 0) for r in rates]
    print("| best fixed at each rate | " + " | ".join(f"{x:.0f}" for x in best) + " | |")
    print("| tuner / best fixed | " + " | ".join(f"{t / b:.2f}" if b > 0 else "-" for t, b in zip(tuner, best)) + " | |")
print(f"{model}, {batching} batching, SLO TTFT {ttft} ms and TPOT {itl} ms; goodput in output tok/s of requests "
      f"that met both{f'; the median of {repeats} runs' if repeats > 1 else ''} ({int(elapsed) // 60} min)\n")
table("goodput_tok_s")
if any("slo_goodput_tok_s" in r for r in rows):
    share = round(100 * (1 - float(percentile)), 6)
    print(f"\nThe same runs judged as the engine judges its SLO (TTFT {ttft} ms, and at most {share:g}% of a "
          f"request's inter-token intervals over {itl} ms; --slo-percentile {percentile}):\n")
    table("slo_goodput_tok_s")
print()
print(f"p99 TTFT / {itl_label} (ms):\n")
print("| setting | " + " | ".join(f"{fmt(r)} req/s" for r in rates) + " |")
print("|---|" + "---|" * len(rates))
for s in settings:
    print(f"| {s} | " + " | ".join(f"{get[(s, r)]['p99_ttft_ms']:.0f} / {get[(s, r)]['p99_itl_ms']:.0f}" for r in rates) + " |")
failed = sum(r["failed"] for r in rows)
print(f"\nFailed requests: {failed}.")
PY
cat "$out/TABLE.md"
