#!/usr/bin/env python3
"""Decode tok/s under tensor parallelism on N nodes, projected from measured allreduces.

    bench/tp_projection.py SHM.txt TCP.txt   (the output of bench/allreduce_bench)

One decoded token on N nodes costs
  weights:    W / (N * node_bw)                 every rank streams its share once
  allreduces: 2 * layers * (alpha * ceil(log2 N) + (N - 1) * 4 * dim / link_bw)
  gather:     alpha + (N - 1) / N * 4 * vocab / link_bw   (the head's logits to rank 0)
  plan:       alpha * ceil(log2 N)              (the step's plan, a few hundred bytes)
where alpha, the time of one message round, is the TCP loopback allreduce of the
smallest measured size (the software stack of both ends) plus WIRE_US for NICs and
one switch. The allreduce gathers every rank's part and adds in rank order
(dist/mpi_world.cc), so each rank receives (N - 1) parts. Assumptions are printed
with the table.
"""
import math
import sys

NODE_BW = 50e9  # bytes/s of memory bandwidth a node's decode reaches (this machine: 30-59 GB/s)
WIRE_US = 5.0  # NIC + one switch, per message round
LINKS = {"10 GbE": 10e9 / 8, "25 GbE": 25e9 / 8, "100 GbE": 100e9 / 8}
# name: (weight bytes, layers, hidden size, vocabulary)
MODELS = {
    "TinyLlama-1.1B Q8_0": (1.17e9, 22, 2048, 32000),
    "LLaMA-2-7B Q4_K_M": (4.08e9, 32, 4096, 32000),
}
NODES = (1, 2, 4, 8)


def read(path):
    rows = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 4 and parts[0].isdigit():
            rows[int(parts[0])] = float(parts[2])
    return rows


def token_seconds(model, n, link_bw, alpha):
    weights, layers, dim, vocab = model
    t = weights / (n * NODE_BW)
    if n == 1:
        return t
    rounds = math.ceil(math.log2(n))
    t += 2 * layers * (alpha * rounds + (n - 1) * 4 * dim / link_bw)
    t += alpha + (n - 1) / n * 4 * vocab / link_bw
    t += alpha * rounds
    return t


def main():
    shm, tcp = read(sys.argv[1]), read(sys.argv[2])
    smallest = min(tcp)
    alpha = (tcp[smallest] + WIRE_US) * 1e-6
    print()
    print("| floats | bytes | shared memory µs | TCP loopback µs |")
    print("|---|---|---|---|")
    for n in sorted(shm):
        print(f"| {n} | {4 * n} | {shm[n]:.1f} | {tcp.get(n, float('nan')):.1f} |")
    print()
    print(f"alpha = TCP loopback at {smallest} floats ({tcp[smallest]:.1f} µs) + {WIRE_US:.0f} µs wire = "
          f"{alpha * 1e6:.1f} µs; node bandwidth {NODE_BW / 1e9:.0f} GB/s")
    print()
    print("| model | link | " + " | ".join(f"{n} node{'s' if n > 1 else ''}" for n in NODES) + " |")
    print("|---|---|" + "---|" * len(NODES))
    for name, model in MODELS.items():
        for link, bw in LINKS.items():
            cells = []
            one = 1 / token_seconds(model, 1, bw, alpha)
            for n in NODES:
                tps = 1 / token_seconds(model, n, bw, alpha)
                cells.append(f"{tps:.0f}" if n == 1 else f"{tps:.0f} ({tps / one:.2f}x)")
            print(f"| {name} | {link} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
