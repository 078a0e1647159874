#!/usr/bin/env bash
# Decode speed of llmserve against llama.cpp's llama-bench on the same files,
# interleaved (llmserve, llama-bench, llmserve, ...) so both see the same bandwidth.
#
#   scripts/bench-vs-llama-bench.sh [-r ROUNDS] [-p PROMPT] MODEL.gguf [MODEL.gguf ...]
#
# Prints one line per file and round: llmserve decode tok/s and its share of the
# in-run bandwidth (of the bytes a token reads: a mixture of experts' chosen experts
# only), llama-bench tg tok/s, and the ratio; with -p, also the prefill of PROMPT
# tokens (llmserve bench-decode --prefill, llama-bench -p) and its ratio. Needs the llama.cpp build in
# ../shared/peers/llama.cpp (LLAMA_BENCH=path overrides).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
llmserve="${LLMSERVE:-$root/build/release/src/cli/llmserve}"
llama_bench="${LLAMA_BENCH:-$root/../shared/peers/llama.cpp/bin/llama-bench}"
rounds=2
prompt=0
while [[ "${1:-}" == -r || "${1:-}" == -p ]]; do
  if [[ $1 == -r ]]; then rounds="$2"; else prompt="$2"; fi
  shift 2
done
[[ $# -ge 1 ]] || { echo "usage: $0 [-r ROUNDS] [-p PROMPT] MODEL.gguf ..." >&2; exit 2; }
[[ -x "$llmserve" ]] || { echo "error: $llmserve not built (cmake --build --preset release)" >&2; exit 2; }
[[ -x "$llama_bench" ]] || { echo "error: llama-bench not found at $llama_bench" >&2; exit 2; }
for f in "$@"; do [[ -f "$f" ]] || { echo "error: $f: no such file" >&2; exit 2; }; done
# The number after "KEY": in a line of JSON.
field() { grep -o "\"$1\": *[0-9.eE+-]*" | head -1 | sed 's/.*: *//'; }

printf '%-28s %5s %10s %8s %12s %7s' file round llmserve "% bw" llama-bench ratio
[[ $prompt -gt 0 ]] && printf ' %12s %12s %7s' "pp llmserve" "pp llama" ratio
printf '\n'
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }
for ((r = 1; r <= rounds; ++r)); do
  for f in "$@"; do
    ours=$("$llmserve" bench-decode -m "$f" --prefill "$((prompt > 0 ? prompt : 16))" --decode 64 -t 2 --json 2>/dev/null)
    tok=$(field decode_tok_s <<<"$ours")
    pct=$(field pct_bandwidth <<<"$ours")
    peer=$("$llama_bench" -m "$f" -p "$prompt" -n 64 -t 2 -r 3 -o jsonl 2>/dev/null)
    peer_tg=$(grep '"n_prompt": *0,' <<<"$peer" | field avg_ts)
    printf '%-28s %5d %10.1f %7.0f%% %12.1f %7.2f' "$(basename "$f")" "$r" "$tok" "$pct" "$peer_tg" "$(ratio "$tok" "$peer_tg")"
    if [[ $prompt -gt 0 ]]; then
      pp=$(field prefill_tok_s <<<"$ours")
      peer_pp=$(grep '"n_gen": *0,' <<<"$peer" | field avg_ts)
      printf ' %12.1f %12.1f %7.2f' "$pp" "$peer_pp" "$(ratio "$pp" "$peer_pp")"
    fi
    printf '\n'
  done
done
