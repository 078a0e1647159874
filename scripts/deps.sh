#!/usr/bin/env bash
# Installs the Debian 12 packages llmserve needs to build, test and run, skipping
# those already present. Sourced by setup-and-demo.sh and test.sh.
set -euo pipefail

LLMSERVE_PACKAGES=(
  g++ cmake ninja-build pkg-config make curl ca-certificates
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libxxhash-dev libpcre2-dev
  libcpp-httplib-dev libtomlplusplus-dev libboost-dev libicu-dev
  python3 python3-yaml python3-zmq python3-msgpack python3-cbor2 python3-jinja2
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
  libopenmpi-dev openmpi-bin
)
# The browser test of the dashboard (tests/ui) drives Debian's Chromium; its npm
# package comes from the npm registry when the test first runs (node 20+ needed).
LLMSERVE_TEST_PACKAGES=(chromium)
# The libFuzzer targets (scripts/fuzz-*.sh) build with clang and its sanitizer and
# fuzzer runtimes.
LLMSERVE_FUZZ_PACKAGES=(clang libclang-rt-14-dev)

install_deps() { install_packages "${LLMSERVE_PACKAGES[@]}"; }
# A test package that cannot be installed skips its test rather than the whole suite.
install_test_deps() {
  install_packages "${LLMSERVE_PACKAGES[@]}"
  install_packages "${LLMSERVE_TEST_PACKAGES[@]}" ||
    echo "could not install ${LLMSERVE_TEST_PACKAGES[*]}: the browser test will be skipped"
}
install_fuzz_deps() { install_packages "${LLMSERVE_PACKAGES[@]}" "${LLMSERVE_FUZZ_PACKAGES[@]}"; }

install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq || true  # offline mirrors may refuse update; install can still work
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}
