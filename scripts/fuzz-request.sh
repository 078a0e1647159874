#!/usr/bin/env bash
# Fuzzes request bodies → validated parameters for /v1/completions and
# /v1/chat/completions, with a structure-aware JSON mutator seeded by real requests
# (fuzz/seeds/request).
#   scripts/fuzz-request.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
fuzz_build request_fuzz
mkdir -p "$(fuzz_corpus request_fuzz)"
cp fuzz/seeds/request/*.json "$(fuzz_corpus request_fuzz)/"
fuzz_run request_fuzz "${1:-600}" -max_len=8192 -dict=fuzz/dict/request.dict
