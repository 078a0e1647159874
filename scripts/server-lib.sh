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
