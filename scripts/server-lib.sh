#!/usr/bin/env bash
# Shared by the scripts that start servers (llmserve, llama-server) side by side:
#   wait_ready URL PID   polls URL until it answers (false if PID exits first)
#   stop PID             SIGTERM, then waits for the process
wait_ready() {  # URL PID
  for _ in $(seq 1 600); do
    if curl -sf "$1" >/dev/null 2>&1; then return 0; fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}

stop() {  # PID
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# The llama.cpp reference scripts (llama-cpp-*.sh) run llama-server on the same file
# as the tests, with the settings that make its numbers comparable: a 512 context, one
# slot, one thread, an F32 KV cache.
#   reference_server MODEL PORT LOG [MORE ARGS...]   starts it in the background,
#   waits until it answers, and sets $pid (false, with the log's end, if it fails)
reference_server() {  # MODEL PORT LOG [ARGS...]; llama.cpp's binaries from $LLAMA_BIN
  local lib bin model=$1 port=$2 log=$3
  lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  bin=${LLAMA_BIN:-$lib/../../shared/peers/llama.cpp/bin}
  shift 3
  LD_LIBRARY_PATH=$bin "$bin/llama-server" -m "$model" -c 512 -np 1 -t 1 -ctk f32 -ctv f32 --port "$port" "$@" \
    >"$log" 2>&1 &
  pid=$!
  wait_ready "localhost:$port/health" $pid || { tail -5 "$log"; return 1; }
}
