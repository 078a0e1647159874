#!/usr/bin/env bash
# The seeds' LLaMA-2-7B table on this machine: generated weights of LLaMA-2-7B's shapes
# (make-model --preset llama-7b) in F16, Q8_0 and Q4_K; per type the file size, the
# peak resident memory of `llmserve generate`, and the time of 100 generated tokens
# after a 10-token prompt (end-of-generation ignored), as generate reports it (load
# not counted). FP32 (27 GB)
# does not fit in this machine's 24 GB and is not run: it would swap.
#   scripts/bench-7b.sh            (about 15 minutes on 2 cores; 25 GB of disk in $TMPDIR)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| type | file (GB) | peak RSS (GB) | 100 tokens (s) | ms per token | prompt (s) |"
echo "|---|---|---|---|---|---|"
for type in f16 q8_0 q4_k; do
  file=$work/llama-7b-$type.gguf
  "$llmserve" make-model --preset llama-7b --type "$type" --seed 1 "$file" >/dev/null 2>&1
  /usr/bin/time -f "%M" -o "$work/rss" "$llmserve" generate -m "$file" -p "Once upon a time there was a little girl" \
    -n 100 --temp 0 --ignore-eos -t "$(nproc)" >/dev/null 2>"$work/gen.log"
  python3 - "$type" "$(stat -c %s "$file")" "$(tail -1 "$work/rss")" "$work/gen.log" <<'PY'
import re, sys
t, size, rss_kb, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), open(sys.argv[4]).read()
gen = re.search(r"generation: (\d+) tokens in ([0-9.]+) s", log)
prompt = re.search(r"prompt: \d+ tokens in ([0-9.]+) s", log)
n, secs = int(gen.group(1)), float(gen.group(2))
print(f"| {t} | {size / 2**30:.2f} | {rss_kb / 2**20:.2f} | {secs:.1f} | {1000 * secs / n:.0f} | {float(prompt.group(1)):.2f} |")
PY
  rm -f "$file"
done
