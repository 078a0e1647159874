#!/usr/bin/env bash
# Fuzzes the chat-template renderer on random message lists for every family, and
# template detection on random sources.
#   scripts/fuzz-chat-template.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
fuzz_build chat_template_fuzz
fuzz_run chat_template_fuzz "${1:-600}" -max_len=4096
