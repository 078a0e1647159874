#!/usr/bin/env bash
# Fuzzes the Jinja chat-template interpreter on mutated templates, seeded with the
# published templates in tests/data/chat_templates.
#   scripts/fuzz-jinja.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
fuzz_build jinja_fuzz
mkdir -p "$(fuzz_corpus jinja_fuzz)"
cp tests/data/chat_templates/*.jinja "$(fuzz_corpus jinja_fuzz)/"
fuzz_run jinja_fuzz "${1:-600}" -max_len=16384 -timeout=10 -dict=fuzz/dict/jinja.dict
