#!/usr/bin/env bash
# The browser test of the dashboard (ui_test.mjs), as ctest runs it: installs its npm
# package (playwright-core) into tests/ui/node_modules from the committed lock file,
# and exits 77 (ctest's skip) with a message when the model, node 20+, Debian's
# chromium or the npm registry is missing.
#   run_ui_test.sh LLMSERVE_BIN MODEL.gguf OUT_DIR
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1" model="$2" out="$3"
skip() {
  echo "SKIP: $*"
  exit 77
}

[[ -f "$model" ]] || skip "needs $model (the shared test data in ../shared)"
command -v node >/dev/null && command -v npm >/dev/null || skip "needs node 20+ and npm"
major="$(node -p 'process.versions.node.split(".")[0]')"
((major >= 20)) || skip "needs node 20+ (playwright-core), found $(node --version)"
browser="${LLMSERVE_CHROMIUM:-$(command -v chromium || true)}"
[[ -n "$browser" && -x "$browser" ]] || skip "needs Debian's chromium (apt-get install chromium; scripts/test.sh installs it)"
if ! (cd "$here" && npm ls playwright-core >/dev/null 2>&1); then
  (cd "$here" && npm ci --no-audit --no-fund) || skip "could not install playwright-core from the npm registry (npm ci in tests/ui)"
fi
exec node "$here/ui_test.mjs" "$bin" "$model" "$out" "$browser"
