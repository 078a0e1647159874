#!/usr/bin/env bash
# The seeds' optimization table, reproduced on this machine: one generated model per
# shape, each row a precision or a serving feature, measured with `llmserve bench serve`
# against `llmserve serve`:
#   single-request latency (100 tokens; cold: the first request after start, warm: the
#   mean of the next three), throughput at saturation (req/s, output tok/s), resident
#   memory (RSS and its peak), TTFT p99 at a fixed rate, cost per million output tokens
#   at a stated hourly price.
#
#   scripts/bench-table.sh [--quick] [--peer] [--price-per-hour USD]
#
# --quick: GPT-2-small shapes and short runs (under 20 minutes on 2 cores); otherwise
# GPT-2-large and TinyLlama-1.1B shapes (hours). --peer adds llama.cpp's llama-server
# on the same files (continuous batching, 16 slots). Writes docs/bench-table/TABLE.md
# and bar charts (SVG) there, stamped with the machine, the date and the commit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/server-lib.sh
source "$here/scripts/server-lib.sh"
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
quick=0 peer=0 price=0.10
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1 ;;
    --peer) peer=1 ;;
    --price-per-hour) price=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ $quick -eq 1 ]]; then
  shapes=(gpt2-small) saturation_prompts=16 saturation_len=32 rate=1 rate_prompts=12
else
  shapes=(gpt2-large tinyllama-1.1b) saturation_prompts=64 saturation_len=64 rate=0.5 rate_prompts=32
fi
# BENCH_TABLE_SHAPES="tiny" BENCH_TABLE_MAKE_ARGS="--dim 256 --ffn 512" (make-model
# presets and overrides) tries the script out in a few minutes.
if [[ -n ${BENCH_TABLE_SHAPES:-} ]]; then read -r -a shapes <<<"$BENCH_TABLE_SHAPES"; fi
out=${BENCH_TABLE_OUT:-$here/docs/bench-table}
mkdir -p "$out"
work=$(mktemp -d)
pid=
cleanup() {
  [[ -n $pid ]] && stop "$pid"
  rm -rf "$work"
}
trap cleanup EXIT
port=18931
# BENCH_TABLE_RESULTS=FILE: append the rows to FILE (rows of an earlier run there are
# tabled with them); BENCH_TABLE_ROWS=REGEX: run only the rows whose label matches
# (the peer's rows are "llama-server TYPE (16 slots)"). Together they rerun part of a
# table without the hours of the rest.
results=${BENCH_TABLE_RESULTS:-$work/results.jsonl}
row_wanted() { [[ -z ${BENCH_TABLE_ROWS:-} || $1 =~ ${BENCH_TABLE_ROWS} ]]; }

# bench serve against the server on $port; prints the result JSON's path.
bench() {  # NAME ARGS...
  local name=$1; shift
  "$llmserve" bench serve --base-url "http://127.0.0.1:$port" --ignore-eos --price-per-hour "$price" \
    --save-result "$work/$name.json" "$@" >"$work/$name.log" 2>&1
  echo "$work/$name.json"
}

# Runs every measurement of one row against the server on $port (pid $pid).
measure_row() {  # SHAPE LABEL DATASET_ARGS...
  local shape=$1 label=$2; shift 2
  local key=${shape}_$(echo "$label" | tr -c 'A-Za-z0-9' '_')
  local cold warm sat ttft
  cold=$(bench "$key-cold" --num-prompts 1 --max-concurrency 1 --output-len 100 --input-len 32 "$@")
  warm=$(bench "$key-warm" --num-prompts 3 --max-concurrency 1 --output-len 100 --input-len 32 "$@")
  sat=$(bench "$key-sat" --num-prompts "$saturation_prompts" --max-concurrency 16 --output-len "$saturation_len" \
    --input-len 64 --request-rate inf "$@")
  ttft=$(bench "$key-rate" --num-prompts "$rate_prompts" --request-rate "$rate" --output-len "$saturation_len" \
    --input-len 64 --seed 1 "$@")
  python3 - "$shape" "$label" "$cold" "$warm" "$sat" "$ttft" "/proc/$pid/status" >>"$results" <<'PY'
import json, sys
shape, label, cold, warm, sat, ttft, status = sys.argv[1:]
c, w, s, t = (json.load(open(p)) for p in (cold, warm, sat, ttft))
kb = {l.split(":")[0]: int(l.split()[1]) for l in open(status) if l.startswith(("VmRSS", "VmHWM"))}
failed = c["failed"] + w["failed"] + s["failed"] + t["failed"]
print(json.dumps({"shape": shape, "row": label, "cold_ms": c["mean_e2el_ms"], "warm_ms": w["mean_e2el_ms"],
                  "req_s": s["request_throughput"], "tok_s": s["output_throughput"], "rss_gb": kb["VmRSS"] / 2**20,
                  "peak_gb": kb["VmHWM"] / 2**20, "ttft_p99_ms": t["p99_ttft_ms"],
                  "usd_per_m_tokens": s["cost"]["per_million_output_tokens"], "failed": failed,
                  "prefix_hit_rate": (s.get("server_metrics") or {}).get("prefix_cache_hit_rate")}))
PY
}

serve() {  # FILE ARGS...
  local file=$1; shift
  "$llmserve" serve -m "$file" --port "$port" --threads "$(nproc)" --context-length 1024 "$@" >"$work/server.log" 2>&1 &
  pid=$!
  wait_ready "http://127.0.0.1:$port/ready" "$pid" || { tail -5 "$work/server.log"; exit 1; }
}

peer_serve() {  # FILE
  LD_LIBRARY_PATH=$bin "$bin/llama-server" -m "$1" --port "$port" -t "$(nproc)" -c $((1024 * 16)) --parallel 16 \
    --cont-batching >"$work/server.log" 2>&1 &
  pid=$!
  wait_ready "http://127.0.0.1:$port/health" "$pid" || { tail -5 "$work/server.log"; exit 1; }
}

started=$(date +%s)
for shape in "${shapes[@]}"; do
  for type in f32 f16 q8_0 q4_k; do
    # shellcheck disable=SC2086
    "$llmserve" make-model --preset "$shape" ${BENCH_TABLE_MAKE_ARGS:-} --type "$type" --seed 1 "$work/$shape-$type.gguf" \
      >"$work/make-model.log" 2>&1 || { cat "$work/make-model.log" >&2; exit 1; }
  done
  m=$work/$shape
  plain=(--prefix-cache false)
  rows=(
    "FP32|$m-f32.gguf|--batching none ${plain[*]}|"
    "FP16|$m-f16.gguf|--batching none ${plain[*]}|"
    "FP16 + dynamic batching|$m-f16.gguf|--batching dynamic ${plain[*]}|"
    "FP16 + continuous batching|$m-f16.gguf|--batching continuous ${plain[*]}|"
    "INT8 (Q8_0)|$m-q8_0.gguf|--batching continuous ${plain[*]}|"
    "INT4 (Q4_K)|$m-q4_k.gguf|--batching continuous ${plain[*]}|"
    "INT8 + prefix cache|$m-q8_0.gguf|--batching continuous --prefix-cache true|--dataset shared-prefix --prefix-len 48 --num-prefixes 2"
    "INT8 + result cache|$m-q8_0.gguf|--batching continuous ${plain[*]} --result-cache-bytes 268435456|"
    "INT8 + speculative (ngram)|$m-q8_0.gguf|--batching continuous ${plain[*]} --speculative ngram|--dataset sonnet"
  )
  for row in "${rows[@]}"; do
    IFS='|' read -r label file flags data <<<"$row"
    row_wanted "$label" || continue
    echo "== $shape: $label" >&2
    # shellcheck disable=SC2086
    serve "$file" $flags
    # The result cache's row sends every request once before it measures: the measured
    # runs are the repeats, answered from the cache.
    if [[ $label == *"result cache"* ]]; then
      results_kept=$results; results=/dev/null
      measure_row "$shape" "$label"
      results=$results_kept
    fi
    # shellcheck disable=SC2086
    measure_row "$shape" "$label" $data
    stop "$pid"; pid=
  done
  if [[ $peer -eq 1 ]]; then
    for type in f16 q8_0; do
      label="llama-server $type (16 slots)"
      row_wanted "$label" || continue
      echo "== $shape: llama.cpp $type" >&2
      peer_serve "$m-$type.gguf"
      measure_row "$shape" "$label"
      stop "$pid"; pid=
    done
  fi
done
elapsed=$(( $(date +%s) - started ))

python3 - "$results" "$out" "$elapsed" "$price" "$(git -C "$here" rev-parse --short HEAD)" "$quick" <<'PY'
import json, os, platform, subprocess, sys, datetime
results, out, elapsed, price, commit, quick = sys.argv[1:]
rows = [json.loads(l) for l in open(results)]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
lines = [f"# The seeds' table on this machine ({'quick' if quick == '1' else 'full'} run)", "",
         f"Machine: {os.cpu_count()} cores of {cpu}, {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB; "
         f"date {datetime.date.today()}; commit {commit}; `scripts/bench-table.sh{' --quick' if quick == '1' else ''}` took {int(elapsed) // 60} min. "
         f"Generated weights (make-model, seed 1); cost at ${price}/hour.", ""]
for shape in dict.fromkeys(r["shape"] for r in rows):
    rs = [r for r in rows if r["shape"] == shape]
    lines += [f"## {shape}", "",
              "| row | latency, 100 tokens, cold (ms) | warm (ms) | req/s at saturation | output tok/s | RSS (GB) | peak RSS (GB) | TTFT p99 at fixed rate (ms) | $ per 1M output tokens | failed |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rs:
        lines.append(f"| {r['row']} | {r['cold_ms']:.0f} | {r['warm_ms']:.0f} | {r['req_s']:.2f} | {r['tok_s']:.1f} | "
                     f"{r['rss_gb']:.2f} | {r['peak_gb']:.2f} | {r['ttft_p99_ms']:.0f} | {r['usd_per_m_tokens']:.3f} | {r['failed']} |")
    lines.append("")
    # Bar charts: output tok/s and warm latency per row.
    for metric, unit, fname in (("tok_s", "output tokens/s at saturation", "throughput"), ("warm_ms", "ms for 100 tokens, one request", "latency")):
        w, bar, gap, left = 720, 22, 8, 230
        h = 50 + len(rs) * (bar + gap) + 30
        # One bar far beyond the rest (the result cache) is drawn clipped, marked ">>",
        # so that the others stay readable.
        values = sorted(r[metric] for r in rs)
        top = values[-1] if len(values) < 2 or values[-1] < 5 * values[-2] else 1.2 * values[-2]
        top = top or 1
        svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
               f'<rect width="{w}" height="{h}" fill="white"/>',
               f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{shape}: {unit}</text>']
        for i, r in enumerate(rs):
            y = 40 + i * (bar + gap)
            clipped = r[metric] > top
            length = (w - left - 90) * min(r[metric], top) / top
            svg += [f'<text x="{left - 6}" y="{y + bar * 0.7}" text-anchor="end">{r["row"]}</text>',
                    f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{bar}" fill="#4477aa"/>',
                    f'<text x="{left + length + 4:.1f}" y="{y + bar * 0.7}">{">> " if clipped else ""}{r[metric]:.1f}</text>']
        axis_y = 40 + len(rs) * (bar + gap)
        svg += [f'<line x1="{left}" y1="{axis_y}" x2="{w - 90}" y2="{axis_y}" stroke="black"/>',
                f'<text x="{left}" y="{axis_y + 16}">0</text>',
                f'<text x="{w - 90}" y="{axis_y + 16}" text-anchor="end">{top:.1f} {unit.split(",")[0]}</text>', "</svg>"]
        open(os.path.join(out, f"{shape}-{fname}.svg"), "w").write("\n".join(svg) + "\n")
        lines.append(f"![{shape} {fname}]({shape}-{fname}.svg)")
    lines.append("")
# The seeds' table (000, GPT-2 Large on an NVIDIA T4) beside ours: only ratios between
# rows compare across a T4 GPU and these CPU cores.
seeds = {"FP32": (420, 2.4, 5.8), "FP16": (210, 4.8, 3.2), "FP16 + dynamic batching": (180, 15.6, 3.2), "INT8 (Q8_0)": (150, 6.5, 1.8)}
lines += ["## Beside the seeds' table", "",
          "The seeds measured GPT-2 Large on an NVIDIA T4 GPU (latency ms, req/s, GPU memory GB): FP32 420 / 2.4 / 5.8, "
          "FP16 210 / 4.8 / 3.2, FP16 + dynamic batching 180 / 15.6 / 3.2, INT8 150 / 6.5 / 1.8. Across a GPU and CPU "
          "cores only the ratios between rows compare:", "",
          "| ratio | seeds (T4) | " + " | ".join(dict.fromkeys(r["shape"] for r in rows)) + " |",
          "|---|---|" + "---|" * len(dict.fromkeys(r["shape"] for r in rows))]
def ratio(shape, a, b, key, invert=False):
    ra = next((r for r in rows if r["shape"] == shape and r["row"] == a), None)
    rb = next((r for r in rows if r["shape"] == shape and r["row"] == b), None)
    if not ra or not rb or not rb[key]:
        return "-"
    return f"{(rb[key] / ra[key]) if invert else (ra[key] / rb[key]):.2f}x"
for label, a, b, key, si, invert in (
        ("FP16 latency over FP32", "FP16", "FP32", "warm_ms", 0, False),
        ("FP16 throughput over FP32", "FP16", "FP32", "req_s", 1, False),
        ("FP16 + dynamic batching throughput over FP16", "FP16 + dynamic batching", "FP16", "req_s", 1, False),
        ("INT8 throughput over FP16 (here both with continuous batching)", "INT8 (Q8_0)", "FP16 + continuous batching", "req_s", 1, False),
        ("INT8 memory over FP16 (here RSS, both with continuous batching)", "INT8 (Q8_0)", "FP16 + continuous batching", "rss_gb", 2, False)):
    seed = seeds[a][si] / seeds["FP16" if b.startswith("FP16 +") and a.startswith("INT8") else b][si]
    lines.append(f"| {label} | {seed:.2f}x | " + " | ".join(ratio(s, a, b, key) for s in dict.fromkeys(r["shape"] for r in rows)) + " |")
lines.append("")
open(os.path.join(out, "TABLE.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
