#!/usr/bin/env bash
# Installs what is needed, builds everything (release) and runs the whole test suite.
#   scripts/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
install_test_deps

PRESET="${LLMSERVE_TEST_PRESET:-release}"
cmake --preset "$PRESET" >/dev/null
cmake --build --preset "$PRESET"
ctest --preset "$PRESET" -j2 "$@"
