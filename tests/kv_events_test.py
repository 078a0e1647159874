#!/usr/bin/env python3
"""KV-cache events, read by a subscriber on another stack (pyzmq, msgpack) than the
publisher's (libzmq through cppzmq, msgpack-c): `llmserve serve --kv-events` on
stories260K sends BlockStored for a completed prompt's full blocks, with the prompt's
token ids (from /tokenize) and each block chained to the one before, and BlockRemoved
for those blocks once later prompts evict them from a small KV cache. Sequence numbers
are gapless and nothing is dropped.

With `sha256-cbor`, the server runs with `--prefix-hash sha256-cbor --prefix-hash-seed 0`
and the prompt's block keys must also equal those computed here as vLLM's sha256_cbor
(and llm-d's indexer) computes them, with cbor2 and hashlib.

  tests/kv_events_test.py LLMSERVE_BINARY MODEL.gguf [sha256-cbor]
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import msgpack
import zmq

BLOCK = 16


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def sha256_cbor_keys(ids, seed):
    """vLLM's sha256_cbor block hashes of the full blocks of ids, as 64-bit event keys."""
    import hashlib

    import cbor2

    def h(x):
        return hashlib.sha256(cbor2.dumps(x, canonical=True)).digest()
    parent, keys = h(seed), []
    for i in range(len(ids) // BLOCK):
        parent = h((parent, tuple(ids[i * BLOCK:(i + 1) * BLOCK]), None))
        keys.append(int.from_bytes(parent[24:], "big"))
    return keys


def main():
    binary, model = sys.argv[1], sys.argv[2]
    sha256_cbor = len(sys.argv) > 3 and sys.argv[3] == "sha256-cbor"
    if not os.path.exists(model):
        print(f"skipped: needs {model}")
        return 0
    zport = free_port()
    extra = ["--prefix-hash", "sha256-cbor", "--prefix-hash-seed", "0"] if sha256_cbor else []
    server = subprocess.Popen(
        [binary, "serve", "-m", model, "--port", "0", "--kv-events", f"tcp://127.0.0.1:{zport}",
         "--kv-events-pod", "pod-a", "--context-length", "128", "--max-running", "1",
         "--kv-cache-memory", str(40 * BLOCK * 5 * 2 * 32 * 2)] + extra,  # 40 blocks of F16 keys and values
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    try:
        line = server.stdout.readline()
        port = int(line.rsplit(":", 1)[1])
        ctx = zmq.Context()
        sub = ctx.socket(zmq.SUB)
        sub.connect(f"tcp://127.0.0.1:{zport}")
        topic = b"kv@pod-a@stories260K"
        sub.setsockopt(zmq.SUBSCRIBE, topic)
        messages = []

        def receive(timeout_ms):
            while sub.poll(timeout_ms):
                frames = sub.recv_multipart()
                check(len(frames) == 3 and frames[0] == topic, f"bad frames {frames[:2]}")
                seq = int.from_bytes(frames[1], "big")
                ts, events, dp_rank = msgpack.unpackb(frames[2], raw=False)
                check(dp_rank == 0 and ts > 1.6e9, f"batch header {ts} {dp_rank}")
                messages.append((seq, events))
                timeout_ms = 100

        def receive_until(done, seconds=30):
            # Events are published by the engine thread and may trail the HTTP answer on
            # a loaded machine: read until what the check needs has arrived (or time is up).
            deadline = time.time() + seconds
            while not done() and time.time() < deadline:
                receive(200)

        # The subscription takes a moment to reach the publisher: send requests until
        # one's events arrive.
        # Events published before then are lost to this subscriber (zmq's slow joiner):
        # the warm-up prompts' blocks may be removed later without having been seen stored.
        deadline = time.time() + 20
        warmups = []
        while not messages and time.time() < deadline:
            warmups.append(f"Lily had a cat {len(warmups)}. " * 6)
            post(port, "/v1/completions", {"prompt": warmups[-1], "max_tokens": 2, "temperature": 0})
            receive(300)
        check(bool(messages), "no event arrived")

        prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends."
        ids = post(port, "/tokenize", {"prompt": prompt})["tokens"]
        check(len(ids) >= 2 * BLOCK, f"prompt of {len(ids)} tokens is too short")
        post(port, "/v1/completions", {"prompt": prompt, "max_tokens": 4, "temperature": 0})

        def stored_blocks():
            stored = {}
            for _, events in messages:
                for e in events:
                    if e[0] == "BlockStored":
                        check(e[4] == BLOCK and e[5] is None and e[6] == "CPU", f"BlockStored fields {e[4:]}")
                        check(len(e[1]) == 1 and len(e[3]) == BLOCK, "one block per BlockStored")
                        stored[e[1][0]] = (e[2], e[3])
            return stored

        def prompt_chain():
            # Walk the prompt's chain: block i holds ids[16i:16i+16], its parent is block i-1.
            stored = stored_blocks()
            chain, found_counts = [], []
            parent = None
            for i in range(len(ids) // BLOCK):
                want = ids[i * BLOCK:(i + 1) * BLOCK]
                found = [h for h, (p, toks) in stored.items() if p == parent and toks == want]
                found_counts.append(len(found))
                if len(found) != 1:
                    break
                chain.append(found[0])
                parent = found[0]
            return chain, found_counts

        receive_until(lambda: len(prompt_chain()[0]) == len(ids) // BLOCK)
        chain, found_counts = prompt_chain()
        for i, n in enumerate(found_counts):
            check(n == 1, f"block {i} of the prompt: {n} matching BlockStored events")
        if sha256_cbor:
            want = sha256_cbor_keys(ids, "0")
            check(chain == want[:len(chain)] and len(chain) == len(want), f"keys {chain} are not sha256_cbor's {want}")

        # New prompts fill the 40 blocks and evict the prompt's (least recently used).
        for j in range(12):
            post(port, "/v1/completions", {"prompt": f"Tom and Sue went to the {j} big hill. " * 4,
                                           "max_tokens": 8, "temperature": 0})

        def removed_blocks():
            removed = set()
            for _, events in messages:
                for e in events:
                    if e[0] == "BlockRemoved":
                        removed.update(e[1])
            return removed

        receive_until(lambda: bool(chain) and set(chain) <= removed_blocks())
        stored = stored_blocks()
        removed = removed_blocks()
        check(bool(chain) and set(chain) <= removed, f"{len(set(chain) - removed)} of the prompt's blocks never removed")
        # Every removal of a block this subscriber did not see stored must come from the
        # warm-up: blocks stored before the subscription took hold. They were cached before
        # any block seen stored, so the LRU cache evicts them all first; after the first
        # removal of a block seen stored, every removal is of a block stored earlier in the
        # stream, and there are no more unseen ones than the warm-up prompts' full blocks.
        seen_stored, seen_removed, unseen = set(), False, set()
        for _, events in messages:
            for e in events:
                if e[0] == "BlockStored":
                    seen_stored.update(e[1])
                elif e[0] == "BlockRemoved":
                    for h in e[1]:
                        if h in seen_stored:
                            seen_removed = True
                        else:
                            check(not seen_removed, f"BlockRemoved for block {h}, never stored, after "
                                                    "eviction reached the blocks seen stored")
                            unseen.add(h)
        warmup_blocks = sum(len(post(port, "/tokenize", {"prompt": w})["tokens"]) // BLOCK for w in warmups)
        check(len(unseen) <= warmup_blocks,
              f"{len(unseen)} blocks removed but never stored, more than the warm-up's {warmup_blocks}")
        seqs = [s for s, _ in messages]
        check(seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"sequence numbers with gaps: {seqs[:20]}")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        check("llmserve_kv_events_dropped_total 0\n" in text, "events were dropped")
        print(f"{len(messages)} messages, {len(stored)} blocks stored, {len(removed)} removed, "
              f"prompt chain of {len(chain)} blocks")
    finally:
        server.terminate()
        server.wait(timeout=30)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
