#!/usr/bin/env bash
# Load time and memory of one model as a GGUF file and as a Hugging Face directory,
# interleaved: `make-model PRESET --type TYPE` writes both forms of the same weights,
# then each round loads each form in a fresh process (`llmserve inspect --load`, which
# loads as `serve` does), alternating which goes first. The files stay in the page
# cache between rounds (both forms alike): this measures llmserve's work, not the disk.
#   scripts/load-compare.sh [PRESET] [TYPE] [ROUNDS]   (default tinyllama-1.1b f16 5)
# Prints every load and the median of each form: seconds (wall, and the process's CPU
# time, steadier on a shared machine), resident memory after the load (VmRSS, and its
# anonymous and file parts) and the peak (VmHWM), in MiB.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
preset=${1:-tinyllama-1.1b}
type=${2:-f16}
rounds=${3:-5}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

"$llmserve" make-model --preset "$preset" --type "$type" "$work/model.gguf" >/dev/null 2>&1
"$llmserve" make-model --preset "$preset" --type "$type" --format hf "$work/model" >/dev/null 2>&1
echo "$preset $type: GGUF $(du -m "$work/model.gguf" | cut -f1) MiB, directory $(du -sm "$work/model" | cut -f1) MiB"
: >"$work/results"
for round in $(seq 1 "$rounds"); do
  order=(gguf dir)
  (( round % 2 == 0 )) && order=(dir gguf)
  for form in "${order[@]}"; do
    path=$work/model.gguf
    [[ $form == dir ]] && path=$work/model
    line=$("$llmserve" inspect --load "$path" 2>/dev/null)
    echo "round $round $form: $line"
    echo "$form $line" >>"$work/results"
  done
done
python3 - "$work/results" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    form, rest = line.split(" ", 1)
    nums = [float(x) for x in re.findall(r"[0-9]+\.[0-9]+", rest)]
    rows.setdefault(form, []).append(nums)  # seconds, CPU seconds, rss, anon, file, peak
names = ["load s", "CPU s", "RSS MiB", "anon MiB", "file MiB", "peak MiB"]
med = {f: [statistics.median(r[i] for r in rs) for i in range(6)] for f, rs in rows.items()}
print("| form | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for f in ("gguf", "dir"):
    print(f"| {f} | " + " | ".join(f"{v:.2f}" if i < 2 else f"{v:.0f}" for i, v in enumerate(med[f])) + " |")
print("| dir / gguf | " + " | ".join(f"{med['dir'][i] / med['gguf'][i]:.3f}" for i in range(6)) + " |")
PY
