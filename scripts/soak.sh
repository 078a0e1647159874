#!/usr/bin/env bash
# Soak: mixed traffic (streams and whole answers, chats, the result and prefix caches,
# cancels, timeouts, bad requests, stalled readers, slow headers) against the real
# stories260K model for MINUTES, sampling the server's RSS, open fds, threads and KV
# blocks every 5 s; fails on growth (bench/soak.cc lists the checks).
#   scripts/soak.sh [MINUTES]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-30}"
MODEL="${LLMSERVE_SOAK_MODEL:-../shared/models/stories260K.gguf}"
if [ ! -f "$MODEL" ]; then
  echo "soak: $MODEL is absent (set LLMSERVE_SOAK_MODEL to a GGUF model)" >&2
  exit 1
fi
cmake --preset release >/dev/null
cmake --build --preset release --target llmserve llmserve_soak
# The server logs each stalled reader it cuts off; warnings and errors are enough here.
# --feedback-recent: the window of request ids POST /v1/feedback can rate (~80 bytes
# each) holds 100,000 by default, which this traffic (about 50 requests a second) fills
# only after half an hour; 5,000 fill during warm-up, so that the drift check sees the
# window at its bound rather than filling.
LLMSERVE_LOG="${LLMSERVE_LOG:-warn}" exec build/release/bench/llmserve_soak --serve build/release/src/cli/llmserve -m "$MODEL" --minutes "$MINUTES" \
  --clients 8 --sample-every 5 --server-args "--threads 1 --max-running 32 --result-cache-bytes 8MiB --feedback-recent 5000"
