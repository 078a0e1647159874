#!/usr/bin/env bash
# Decode speed of llmserve against llama.cpp's llama-bench on the same files,
# interleaved (llmserve, llama-bench, llmserve, ...) so both see the same bandwidth.
#
#   scripts/bench-vs-llama-bench.sh [-r ROUNDS] MODEL.gguf [MODEL.gguf ...]
#
# Prints one line per file and round: llmserve decode tok/s and its share of the
# in-run bandwidth, llama-bench tg tok/s, and the ratio. Needs the llama.cpp build in
# ../shared/peers/llama.cpp (LLAMA_BENCH=path overrides).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
llmserve="${LLMSERVE:-$root/build/release/src/cli/llmserve}"
llama_bench="${LLAMA_BENCH:-$root/../shared/peers/llama.cpp/bin/llama-bench}"
rounds=2
if [[ "${1:-}" == "-r" ]]; then rounds="$2"; shift 2; fi
[[ $# -ge 1 ]] || { echo "usage: $0 [-r ROUNDS] MODEL.gguf ..." >&2; exit 2; }
[[ -x "$llmserve" ]] || { echo "error: $llmserve not built (cmake --build --preset release)" >&2; exit 2; }
[[ -x "$llama_bench" ]] || { echo "error: llama-bench not found at $llama_bench" >&2; exit 2; }
for f in "$@"; do [[ -f "$f" ]] || { echo "error: $f: no such file" >&2; exit 2; }; done
# The number after "KEY": in a line of JSON.
field() { grep -o "\"$1\": *[0-9.eE+-]*" | head -1 | sed 's/.*: *//'; }

printf '%-28s %5s %10s %8s %12s %7s\n' file round llmserve "% bw" llama-bench ratio
for ((r = 1; r <= rounds; ++r)); do
  for f in "$@"; do
    ours=$("$llmserve" bench-decode -m "$f" --prefill 16 --decode 64 -t 2 --json 2>/dev/null)
    tok=$(field decode_tok_s <<<"$ours")
    pct=$(field pct_bandwidth <<<"$ours")
    peer=$("$llama_bench" -m "$f" -p 0 -n 64 -t 2 -r 3 -o jsonl 2>/dev/null | field avg_ts)
    printf '%-28s %5d %10.1f %7.0f%% %12.1f %7.2f\n' "$(basename "$f")" "$r" "$tok" "$pct" "$peer" \
      "$(awk -v a="$tok" -v b="$peer" 'BEGIN { print a / b }')"
  done
done
