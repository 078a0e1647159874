#!/usr/bin/env bash
# The tensor-parallel allreduce's cost per message size on this machine, two ranks,
# over shared memory (Open MPI's default within a host) and over TCP loopback
# (`--mca btl tcp,self`), then the decode projection to several nodes that
# bench/tp_projection.py derives from the TCP figures (docs/benchmarks.md).
#
#   bench/allreduce_cost.sh [ROUNDS=300]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bench=${ALLREDUCE_BENCH:-$here/build/release/bench/allreduce_bench}
rounds=${1:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to core -np 2)
echo "## shared memory"
"${mpirun[@]}" "$bench" --rounds "$rounds" | tee "$work/shm.txt"
echo "## TCP loopback"
"${mpirun[@]}" --mca btl tcp,self "$bench" --rounds "$rounds" | tee "$work/tcp.txt"
python3 "$here/bench/tp_projection.py" "$work/shm.txt" "$work/tcp.txt"
