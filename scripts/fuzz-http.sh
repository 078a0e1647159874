#!/usr/bin/env bash
# Fuzzes the HTTP request parser as the connection state machine drives it (an
# in-process server on loopback: pipelining, chunked bodies, header and body limits,
# HEAD, 100-continue), seeded by fuzz/seeds/http.
#   scripts/fuzz-http.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
fuzz_build http_fuzz
mkdir -p "$(fuzz_corpus http_fuzz)"
cp fuzz/seeds/http/* "$(fuzz_corpus http_fuzz)/"
fuzz_run http_fuzz "${1:-600}" -max_len=72000 -dict=fuzz/dict/http.dict
