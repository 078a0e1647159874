#!/usr/bin/env bash
# Writes tests/data/llama_cpp_blocks.txt: how llama.cpp encodes and decodes the block
# types llmserve runs natively, so that a test (tests/llama_cpp_blocks_test.cc) holds
# llmserve's decoders and encoders to them without running llama.cpp.
#   scripts/llama-cpp-fixtures.sh
# For each type, on the first 32 rows of blk.0.ffn_up.weight of a synthetic F32 model:
#   llama:  the rows as llama-quantize encodes them (hex), and the checksum of their
#           F32 decoding by llama-quantize --allow-requantize ... F32;
#   ours:   the checksum of the bytes `llmserve quantize` writes, and of their F32
#           decoding by llama.cpp.
# Checksum of a byte string: (sum of its little-endian uint32 words, sum of i * word_i)
# mod 2^64, in hex (tests/llama_cpp_blocks_test.cc computes the same).
# Needs build/release/src/cli/llmserve, ../shared/peers/llama.cpp/bin and python3.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
out=$here/tests/data/llama_cpp_blocks.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$llmserve" make-model --preset tiny --dim 256 --heads 4 --kv-heads 2 --ffn 512 --layers 1 --vocab 512 --seed 7 \
  "$work/f32.gguf" >/dev/null 2>&1

# Prints the hex bytes and the checksum of rows [0, 32) of blk.0.ffn_up.weight.
cat >"$work/rows.py" <<'EOF'
import struct, sys
SIZES = {0: 4, 1: 2, 2: 1, 3: 4, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
BLOCKS = {0: (1, 4), 6: (32, 22), 7: (32, 24), 20: (32, 18), 13: (256, 176), 23: (256, 136), 11: (256, 110)}
def read(path):
    d = open(path, 'rb').read()
    pos = 4
    version, n_tensors, n_kv = struct.unpack_from('<IQQ', d, pos); pos += 20
    def string():
        nonlocal pos
        n, = struct.unpack_from('<Q', d, pos); pos += 8
        s = d[pos:pos + n]; pos += n
        return s.decode()
    def value(t):
        nonlocal pos
        if t == 8: return string()
        if t == 9:
            it, n = struct.unpack_from('<IQ', d, pos); pos += 12
            return [value(it) for _ in range(n)]
        v = d[pos:pos + SIZES[t]]; pos += SIZES[t]
        return v
    align = 32
    for _ in range(n_kv):
        k = string(); t, = struct.unpack_from('<I', d, pos); pos += 4
        v = value(t)
        if k == 'general.alignment': align = struct.unpack('<I', v)[0]
    tensors = {}
    for _ in range(n_tensors):
        name = string(); nd, = struct.unpack_from('<I', d, pos); pos += 4
        ne = struct.unpack_from('<%dQ' % nd, d, pos); pos += 8 * nd
        t, off = struct.unpack_from('<IQ', d, pos); pos += 12
        tensors[name] = (t, ne, off)
    base = (pos + align - 1) // align * align
    t, ne, off = tensors['blk.0.ffn_up.weight']
    bs, ts = BLOCKS[t]
    row = ne[0] // bs * ts
    return t, d[base + off: base + off + 32 * row]
def checksum(b):
    words = struct.unpack('<%dI' % (len(b) // 4), b)
    s = sum(words) % 2**64
    w = sum(i * x for i, x in enumerate(words)) % 2**64
    return '%016x%016x' % (s, w)
t, b = read(sys.argv[1])
print(t, b.hex() if sys.argv[2] == 'hex' else '-', checksum(b))
EOF

{
  echo "# type llama_hex llama_decoded_checksum ours_checksum ours_decoded_by_llama_checksum"
  echo "# made by scripts/llama-cpp-fixtures.sh with llama.cpp $(cat "$here/../shared/peers/README.md" | grep -o 'Commit [0-9a-f]*' | head -1)"
  for t in q5_0 q5_1 iq4_nl q5_k iq4_xs q3_k; do
    T=$(echo "$t" | tr a-z A-Z)
    "$bin/llama-quantize" --pure "$work/f32.gguf" "$work/llama-$t.gguf" "$T" >/dev/null 2>&1
    "$bin/llama-quantize" --allow-requantize "$work/llama-$t.gguf" "$work/llama-$t-f32.gguf" F32 >/dev/null 2>&1
    read -r _ hex _ < <(python3 "$work/rows.py" "$work/llama-$t.gguf" hex)
    read -r _ _ decoded < <(python3 "$work/rows.py" "$work/llama-$t-f32.gguf" sum)
    if [ "$t" = q5_1 ]; then  # llmserve quantize does not write Q5_1
      ours=- ours_decoded=-
    else
      "$llmserve" quantize "$work/f32.gguf" "$work/ours-$t.gguf" --type "$t" >/dev/null 2>&1
      "$bin/llama-quantize" --allow-requantize "$work/ours-$t.gguf" "$work/ours-$t-f32.gguf" F32 >/dev/null 2>&1
      read -r _ _ ours < <(python3 "$work/rows.py" "$work/ours-$t.gguf" sum)
      read -r _ _ ours_decoded < <(python3 "$work/rows.py" "$work/ours-$t-f32.gguf" sum)
    fi
    echo "$t $hex $decoded $ours $ours_decoded"
  done
} >"$out"
echo "wrote $out"
