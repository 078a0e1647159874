// PackedWeights: a weight matrix rearranged at load into the layout the matmul
// kernels stream. Rows are grouped in panels of 16 (the last one padded with zero
// rows) and a panel interleaves its rows so that one 64-byte load holds the same
// columns of all 16 rows: a product then accumulates each row in its own SIMD lane
// and never reduces horizontally, which is what makes GEMV and GEMM share one
// reduction order (see matmul.h). The quantized types keep their GGUF bits (only
// Q8_0's values are stored offset by 128), so a panel has the same size as its 16
// GGUF rows.
//
// Panel layouts (r = row in panel, "step" = 4 consecutive columns of all 16 rows,
// 64 bytes, byte 4r + i holding column 4s + i of row r):
//   F32, F16, BF16: [cols][16] values.
//   Q8_0, Q4_0, Q6_K, IQ4_NL, Q5_0, Q3_K: blocks (super-blocks) in pairs, each pair led
//         by the f16 scales d [16] of its two blocks (64 bytes) (paired_*() below):
//   Q8_0: a block is 8 steps of q + 128.
//   Q4_0: a block is 4 units of 64 bytes: unit u holds step u in its low nibbles and
//         step u + 4 in its high nibbles (GGUF nibble order).
//   Q4_K: per super-block: d [16] f16, dmin [16] f16, then the 12 scale bytes of each
//         row as three 64-byte vectors (bytes 0-3, 4-7, 8-11 of row r at 4r), then
//         per chunk c < 4 eight units: unit u low nibbles = step u of sub-block 2c,
//         high nibbles = step u of sub-block 2c + 1.
//   Q6_K: a super-block is the int8 scales as [16 sub-blocks][16 rows], then per
//         sub-block j < 16 three vectors A, B, C: steps 0 and 1 in A's low/high
//         nibbles, steps 2 and 3 in B's, and the top two bits of step s in bits 2s,
//         2s + 1 of C.
//   IQ4_NL: as Q4_0 (its blocks are Q4_0's, with codes for levels).
//   Q5_0: paired; a block is one vector of fifth bits (byte 4r + i bit u for column
//         4u + i, bit 4 + u for column 16 + 4u + i), then Q4_0's 4 units of low nibbles.
//   Q5_1: as Q5_0, each pair led by d [16] of both blocks, then m [16] of both (128
//         bytes).
//   Q5_K: per super-block: Q4_K's d, dmin and scale vectors, then per chunk c < 4 two
//         vectors of fifth bits followed by Q4_K's eight units of the chunk: bits 2k,
//         2k + 1 of byte 4r + i of vector v = bits 2c, 2c + 1 of row r's qh[4(4v + k) + i]
//         (the fifth bits of unit 4v + k's low and high nibbles).
//   IQ4_XS: per super-block: d [16] f16, scales_h [16], then scales_l as one vector
//         (row r's 4 bytes at 4r), then per sub-block j < 8 Q4_0's 4 units.
//   Q3_K: paired; a super-block is its 12 scale bytes as Q4_K's three vectors, then per
//         pair of sub-blocks (2k, 2k + 1) three vectors V0, V1, V2 of 3-bit levels:
//         with e0..e3 the steps of sub-block 2k and o0..o3 those of 2k + 1,
//         V0 = e0 | e1 << 3 | low2(e2) << 6, V1 = e3 | o0 << 3 | low2(o1) << 6,
//         V2 = o2 | o3 << 3 | bit2(e2) << 6 | bit2(o1) << 7.
//
// Where the active target's decode GEMV walks kGroupPanels panels at a time (AVX-512;
// KernelTable::gemv_panels), the quantized kinds' panels are stored in groups of
// kGroupPanels, interleaved stripe by stripe (a stripe is a block pair, or a Q4_K
// super-block): stripe k of every panel of a group, then stripe k + 1 of each, and so
// on. A decode GEMV, which walks a group's panels together, stripe by stripe, then
// reads one ascending stream of memory per thread: the hardware prefetchers follow
// that at the full read bandwidth, which eight streams a panel apart did not reach
// (84-86% of it for Q4_0 at 58 GB/s; Q6_K at 51-56 GB/s 55-84% with a software
// prefetch, 82-107% interleaved). Prefill GEMMs, which take one or two panels at a
// time, lose up to 3% of their rate to it, their chunk prefetch stepping from stripe
// to stripe. The float kinds keep each panel contiguous (stripe_bytes the whole
// panel): their decode streams 2-4 times the bytes per arithmetic operation and runs
// at the bandwidth either way. Kernels reach a panel through panel() and stride()
// only, so every target computes the same on either layout.
//
// Thread-safety: immutable after pack_weights(); shared by all threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "kernels/panel_memory.h"
#include "tensor/tensor.h"

namespace llms {

inline constexpr int kPanelRows = 16;
inline constexpr int64_t kGroupPanels = 8;

// Whether a target whose decode GEMV walks `gemv_panels` panels at a time gets its
// quantized panels interleaved in groups (see above): the packing and the tiles that
// pick their walk by it ask this one rule.
constexpr bool interleaves_panels(int gemv_panels) { return gemv_panels >= kGroupPanels; }

// The weight types with matmul kernels, indexing the kernel tables.
enum class PackedKind { kF32 = 0, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K, kQ6_K, kQ5_0, kQ5_1, kIQ4_NL, kQ5_K, kIQ4_XS, kQ3_K };
inline constexpr int kNumPackedKinds = 13;

struct PackedWeights {
  PackedKind kind = PackedKind::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t num_panels = 0;
  int64_t panel_bytes = 0;   // a multiple of stripe_bytes
  int64_t stripe_bytes = 0;  // a multiple of 64
  bool interleaved = false;  // groups of panels interleaved; else each panel contiguous
  PanelMemory data;

  // Stripe 0 of panel p; stripe k is k * stride(p) bytes further on.
  const uint8_t* panel(int64_t p) const {
    if (!interleaved) return data.data() + p * panel_bytes;
    return data.data() + p / kGroupPanels * kGroupPanels * panel_bytes + p % kGroupPanels * stripe_bytes;
  }
  int64_t stride(int64_t p) const {
    if (!interleaved) return stripe_bytes;
    return std::min(kGroupPanels, num_panels - p / kGroupPanels * kGroupPanels) * stripe_bytes;
  }
  // Byte v of panel p as if the panel were contiguous (v < panel_bytes).
  const uint8_t* at(int64_t p, int64_t v) const { return panel(p) + v / stripe_bytes * stride(p) + v % stripe_bytes; }
  int64_t num_bytes() const { return num_panels * panel_bytes; }
};

// Offsets from stripe 0 of a panel of paired blocks whose quantized part takes q_bytes
// (a stripe is a pair), `stride` = the panel's stride().
inline int64_t paired_d_offset(int64_t b, int64_t stride) { return b / 2 * stride + 32 * (b % 2); }
inline int64_t paired_q_offset(int64_t b, int64_t q_bytes, int64_t stride) {
  return b / 2 * stride + 64 + q_bytes * (b % 2);
}
inline int64_t paired_stripe_bytes(int64_t q_bytes) { return 64 + 2 * q_bytes; }
// The end of the pair that block b starts or continues, within [.., b1).
inline int64_t pair_end(int64_t b, int64_t b1) { return std::min(b1, (b / 2 + 1) * 2); }
// Whole pairs: the second block of a last, odd pair reads as zeros.
inline int64_t paired_panel_bytes(int64_t blocks, int64_t q_bytes) {
  return (blocks + 1) / 2 * paired_stripe_bytes(q_bytes);
}

// The kind for a GGUF type, or false when there is no kernel for it.
bool packed_kind_for(DType type, PackedKind* kind);
DType packed_kind_dtype(PackedKind kind);

// The sizes of a [rows, cols] matrix of `kind` packed (all but `interleaved` and the
// data), as pack_weights() sets them.
void packed_geometry(PackedKind kind, int64_t rows, int64_t cols, PackedWeights* out);

// Rearranges the rows of `t` (a [rows, cols] matrix of a type packed_kind_for()
// accepts) into `out`. With `row_order` (rows entries), row i of the packed matrix is
// row row_order[i] of `t`: a matrix stored in another format's row order is packed
// straight from its bytes, with no reordered copy in between.
void pack_weights(const Tensor& t, PackedWeights* out, std::span<const int64_t> row_order = {});

}  // namespace llms
