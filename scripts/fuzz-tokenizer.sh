#!/usr/bin/env bash
# Fuzzes the tokenizers (every vocabulary in ../shared/tokenizer and stories260K) on
# random bytes: ids in range, streaming decode = decode, round trips.
#   scripts/fuzz-tokenizer.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
fuzz_build tokenizer_fuzz
corpus="$(fuzz_corpus tokenizer_fuzz)"
mkdir -p "$corpus"
# Seeds: the reference test inputs, one file each, behind a flag byte ('@': no BOS,
# no special tokens, so the round-trip property applies).
for inp in ../shared/tokenizer/*.inp; do
  [ -f "$inp" ] || continue
  awk -v dir="$corpus" -v name="$(basename "$inp" .gguf.inp)" '
    BEGIN { RS = "\n__ggml_vocab_test__\n" }
    { f = sprintf("%s/seed-%s-%03d", dir, name, NR); printf "@%s", $0 > f; close(f) }' "$inp"
done
fuzz_run tokenizer_fuzz "${1:-600}" -max_len=4096
