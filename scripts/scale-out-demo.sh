#!/usr/bin/env bash
# Three llmserve replicas behind nginx (deploy/nginx/llmserve.conf) on loopback, under
# load: one replica is killed with SIGKILL a third of the way through, another is shut
# down with SIGTERM (shutdown_delay, then drain) two thirds of the way through.
#
#   scripts/scale-out-demo.sh [REQUESTS] [WORKERS]     (default 600 requests, 8 workers)
#
# Reports completed and failed requests, the failures after each event, and how many
# requests each replica answered. Fails when a request fails after the SIGTERM (a
# graceful scale-down must lose nothing), when more requests fail after the SIGKILL
# than were in flight (one per worker), or when the SIGTERM'd replica does not exit 0.
# Needs build/release/src/cli/llmserve, nginx (apt-get install nginx-light) and curl.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
llmserve="${LLMSERVE:-$root/build/release/src/cli/llmserve}"
model="${MODEL:-$root/../shared/models/stories260K.gguf}"
requests="${1:-600}"
workers="${2:-8}"
base_port="${BASE_PORT:-18100}"
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
[[ -x "$llmserve" ]] || { echo "error: $llmserve not built (cmake --build --preset release)" >&2; exit 2; }
[[ -x "$nginx_bin" ]] || { echo "error: nginx not installed (apt-get install nginx-light)" >&2; exit 2; }
[[ -f "$model" ]] || { echo "error: $model: no such model" >&2; exit 2; }
[[ "$requests" =~ ^[0-9]+$ && "$workers" =~ ^[0-9]+$ && "$workers" -ge 1 ]] || { echo "usage: $0 [REQUESTS] [WORKERS]" >&2; exit 2; }

tmp="$(mktemp -d /tmp/llmserve-scale-out.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  [[ -f "$tmp/nginx.pid" ]] && "$nginx_bin" -p "$tmp" -c "$tmp/nginx.conf" -s stop 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The committed configuration with this run's ports, inside a minimal nginx.conf that
# runs without root.
ports=($((base_port + 1)) $((base_port + 2)) $((base_port + 3)))
sed -e "s/127.0.0.1:8101/127.0.0.1:${ports[0]}/" -e "s/127.0.0.1:8102/127.0.0.1:${ports[1]}/" \
    -e "s/127.0.0.1:8103/127.0.0.1:${ports[2]}/" -e "s/listen 8100;/listen 127.0.0.1:$base_port;/" \
    "$root/deploy/nginx/llmserve.conf" > "$tmp/llmserve.conf"
cat > "$tmp/nginx.conf" <<EOF
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  include $tmp/llmserve.conf;
}
EOF

for i in 0 1 2; do
  "$llmserve" serve -m "$model" --port "${ports[$i]}" --shutdown-delay 2 --shutdown-timeout 20 \
    > "$tmp/replica$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do
  for _ in $(seq 100); do curl -sf "127.0.0.1:${ports[$i]}/health" > /dev/null && break; sleep 0.1; done
  curl -sf "127.0.0.1:${ports[$i]}/health" > /dev/null || { echo "error: replica $i did not start" >&2; cat "$tmp/replica$i.log" >&2; exit 1; }
done
"$nginx_bin" -p "$tmp" -c "$tmp/nginx.conf"

# Each worker: its share of the requests, one at a time; a line per request:
# start time, HTTP status, the replica nginx used (the last, after retries).
worker() {
  local n="$1" out="$2"
  for ((k = 0; k < n; ++k)); do
    local t0="$EPOCHREALTIME"
    local line
    line=$(curl -s -o /dev/null -w '%{http_code} %header{x-upstream}' --max-time 60 \
      -H 'Content-Type: application/json' \
      -d '{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0.8}' \
      "http://127.0.0.1:$base_port/v1/completions" || echo "000 -")
    echo "$t0 $line" >> "$out"
  done
}
per=$(((requests + workers - 1) / workers))
wpids=()
for ((w = 0; w < workers; ++w)); do worker "$per" "$tmp/load$w.txt" & wpids+=($!); done
total=$((per * workers))
done_count() { cat "$tmp"/load*.txt 2>/dev/null | wc -l; }
wait_for() { while [[ $(done_count) -lt $1 ]]; do sleep 0.05; done; }

wait_for $((total / 3))
t_kill="$EPOCHREALTIME"
{ kill -9 "${pids[0]}" && wait "${pids[0]}"; } 2>/dev/null || true
echo "after $(done_count) requests: SIGKILL replica 0 (port ${ports[0]})"
wait_for $((2 * total / 3))
t_term="$EPOCHREALTIME"
kill -TERM "${pids[1]}"
echo "after $(done_count) requests: SIGTERM replica 1 (port ${ports[1]})"
for p in "${wpids[@]}"; do wait "$p"; done
term_rc=0
wait "${pids[1]}" || term_rc=$?

all="$tmp/all.txt"
cat "$tmp"/load*.txt > "$all"
completed=$(awk '$2 == 200' "$all" | wc -l)
failed=$(awk '$2 != 200' "$all" | wc -l)
failed_kill=$(awk -v a="$t_kill" -v b="$t_term" '$2 != 200 && $1 >= a - 60 && $1 < b' "$all" | wc -l)
failed_term=$(awk -v b="$t_term" '$2 != 200 && $1 >= b' "$all" | wc -l)
echo "requests: $(wc -l < "$all"), completed: $completed, failed: $failed"
echo "failed around the SIGKILL: $failed_kill (at most $workers were in flight)"
echo "failed after the SIGTERM: $failed_term; replica 1 exited with status $term_rc"
echo "retried on another replica by nginx: $(awk 'NF > 3' "$all" | wc -l)"
echo "answered per replica (the last one tried):"
for i in 0 1 2; do echo "  replica $i (port ${ports[$i]}): $(awk -v p="127.0.0.1:${ports[$i]}" '$2 == 200 && $NF == p' "$all" | wc -l)"; done
if [[ $failed -gt 0 ]]; then
  echo "failures:"; awk '$2 != 200 {print "  " $0}' "$all" | head -10
fi
ok=1
[[ $failed_term -eq 0 ]] || { echo "FAIL: requests failed during the graceful scale-down"; ok=0; }
[[ $failed_kill -le $workers ]] || { echo "FAIL: more failures after the SIGKILL than requests in flight"; ok=0; }
[[ $term_rc -eq 0 ]] || { echo "FAIL: the SIGTERM'd replica exited with $term_rc"; ok=0; }
[[ $ok -eq 1 ]] && echo "scale-out-demo: passed"
[[ $ok -eq 1 ]]
