// Rearranges GGUF rows into the panel layouts described in packed_weights.h. Runs
// once per tensor at load, so it is plain scalar code.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "base/check.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_weights.h"
#include "quant/block_formats.h"

namespace llms {
namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The matrix being packed: its rows in their order, or in `order` (row i of the
// matrix is row order[i] of the tensor).
struct Source {
  const Tensor& tensor;
  std::span<const int64_t> order;
  std::array<int64_t, 4> ne;
  const uint8_t* row(int64_t i) const { return tensor.row(order.empty() ? i : order[static_cast<size_t>(i)]); }
};

// Row r of panel p, or null for the padding rows past the end of the matrix.
const uint8_t* source_row(const Source& t, int64_t p, int r) {
  const int64_t row = p * kPanelRows + r;
  return row < t.ne[1] ? t.row(row) : nullptr;
}

template <typename T>
void pack_plain(const Source& t, int64_t p, uint8_t* dst) {
  T* out = reinterpret_cast<T*>(dst);
  for (int r = 0; r < kPanelRows; ++r) {
    const T* src = reinterpret_cast<const T*>(source_row(t, p, r));
    for (int64_t k = 0; k < t.ne[0]; ++k) out[k * kPanelRows + r] = src ? src[k] : T{0};
  }
}

void set_f16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

void pack_q8_0(const Source& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK;
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const BlockQ8_0*>(source_row(t, p, r));
    for (int64_t b = 0; b < nb; ++b) {
      set_f16(dst + paired_d_offset(b, paired_stripe_bytes(512)) + 2 * r, src ? src[b].d : 0);
      uint8_t* body = dst + paired_q_offset(b, 512, paired_stripe_bytes(512));
      for (int s = 0; s < 8; ++s)
        for (int i = 0; i < 4; ++i)
          body[s * 64 + 4 * r + i] = static_cast<uint8_t>((src ? src[b].qs[4 * s + i] : 0) ^ 0x80);
    }
  }
}

// Q4_0 and IQ4_NL, whose blocks are both {d, qs[16]}.
template <typename Block>
void pack_q4_0(const Source& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK;
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const Block*>(source_row(t, p, r));
    for (int64_t b = 0; b < nb; ++b) {
      set_f16(dst + paired_d_offset(b, paired_stripe_bytes(256)) + 2 * r, src ? src[b].d : 0);
      uint8_t* body = dst + paired_q_offset(b, 256, paired_stripe_bytes(256));
      for (int u = 0; u < 4; ++u)
        for (int i = 0; i < 4; ++i) body[u * 64 + 4 * r + i] = src ? src[b].qs[4 * u + i] : 0x88;
    }
  }
}

// The fifth bits of a Q5_0/Q5_1 block's 32 levels (bit i of qh for element i) as the
// 4 bytes of a row in its high-bit vector: byte i bit u for column 4u + i, bit 4 + u
// for column 16 + 4u + i (u < 4).
void put_q5_high_bits(const uint8_t* qh4, uint8_t* out) {
  uint32_t qh;
  std::memcpy(&qh, qh4, 4);
  for (int i = 0; i < 4; ++i) {
    int v = 0;
    for (int u = 0; u < 4; ++u) v |= static_cast<int>((qh >> (4 * u + i)) & 1) << u | static_cast<int>((qh >> (16 + 4 * u + i)) & 1) << (4 + u);
    out[i] = static_cast<uint8_t>(v);
  }
}

// Q5_0 (kMin false: pairs led by d [16] of both blocks) and Q5_1 (led by d, then m).
template <typename Block, bool kMin>
void pack_q5(const Source& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK;
  const int64_t head = kMin ? 128 : 64, pair = head + 2 * 320;
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const Block*>(source_row(t, p, r));
    if (src == nullptr) continue;  // zero rows: d (and m) 0
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* stripe = dst + b / 2 * pair;
      set_f16(stripe + 32 * (b % 2) + 2 * r, src[b].d);
      if constexpr (kMin) set_f16(stripe + 64 + 32 * (b % 2) + 2 * r, src[b].m);
      uint8_t* body = stripe + head + 320 * (b % 2);
      put_q5_high_bits(src[b].qh, body + 4 * r);
      for (int u = 0; u < 4; ++u)
        for (int i = 0; i < 4; ++i) body[64 + u * 64 + 4 * r + i] = src[b].qs[4 * u + i];
    }
  }
}

void pack_q4_k(const Source& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK_K;
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const BlockQ4_K*>(source_row(t, p, r));
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* base = dst + b * 2304;
      const uint16_t d = src ? src[b].d : 0, dmin = src ? src[b].dmin : 0;
      std::memcpy(base + 2 * r, &d, 2);
      std::memcpy(base + 32 + 2 * r, &dmin, 2);
      for (int v = 0; v < 3; ++v)
        for (int i = 0; i < 4; ++i) base[64 + 64 * v + 4 * r + i] = src ? src[b].scales[4 * v + i] : 0;
      for (int c = 0; c < 4; ++c)
        for (int u = 0; u < 8; ++u)
          for (int i = 0; i < 4; ++i) base[256 + (8 * c + u) * 64 + 4 * r + i] = src ? src[b].qs[32 * c + 4 * u + i] : 0;
    }
  }
}

void pack_q5_k(const Source& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK_K;
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const BlockQ5_K*>(source_row(t, p, r));
    if (src == nullptr) continue;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* base = dst + b * 2816;
      set_f16(base + 2 * r, src[b].d);
      set_f16(base + 32 + 2 * r, src[b].dmin);
      for (int v = 0; v < 3; ++v)
        for (int i = 0; i < 4; ++i) base[64 + 64 * v + 4 * r + i] = src[b].scales[4 * v + i];
      for (int c = 0; c < 4; ++c) {
        uint8_t* chunk = base + 256 + 640 * c;
        for (int u = 0; u < 8; ++u) {
          for (int i = 0; i < 4; ++i) {
            // Bits 2c, 2c + 1 of qh (the fifth bits of sub-blocks 2c, 2c + 1) to bits
            // 2(u % 4), 2(u % 4) + 1 of high-bit vector u / 4.
            const int two = (src[b].qh[4 * u + i] >> (2 * c)) & 3;
            chunk[64 * (u / 4) + 4 * r + i] = static_cast<uint8_t>(chunk[64 * (u / 4) + 4 * r + i] | (two << (2 * (u % 4))));
            chunk[128 + 64 * u + 4 * r + i] = src[b].qs[32 * c + 4 * u + i];
          }
        }
      }
    }
  }
}

void pack_iq4_xs(const Source& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK_K;
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const BlockIQ4_XS*>(source_row(t, p, r));
    if (src == nullptr) continue;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* base = dst + b * 2176;
      set_f16(base + 2 * r, src[b].d);
      set_f16(base + 32 + 2 * r, src[b].scales_h);
      std::memcpy(base + 64 + 4 * r, src[b].scales_l, 4);
      for (int j = 0; j < 8; ++j)
        for (int u = 0; u < 4; ++u)
          for (int i = 0; i < 4; ++i) base[128 + 256 * j + 64 * u + 4 * r + i] = src[b].qs[16 * j + 4 * u + i];
    }
  }
}

// Level 0..7 of element e of a Q3_K super-block (the value is level - 4).
int q3_level(const BlockQ3_K& b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  return ((b.qs[32 * h + l] >> (2 * k)) & 3) | (((b.hmask[l] >> (4 * h + k)) & 1) << 2);
}

void pack_q3_k(const Source& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK_K, stripe = paired_stripe_bytes(1728);
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const BlockQ3_K*>(source_row(t, p, r));
    if (src == nullptr) continue;
    for (int64_t b = 0; b < nb; ++b) {
      set_f16(dst + paired_d_offset(b, stripe) + 2 * r, src[b].d);
      uint8_t* base = dst + paired_q_offset(b, 1728, stripe);
      for (int v = 0; v < 3; ++v)
        for (int i = 0; i < 4; ++i) base[64 * v + 4 * r + i] = src[b].scales[4 * v + i];
      int q[kQK_K];
      for (int e = 0; e < kQK_K; ++e) q[e] = q3_level(src[b], e);
      for (int k = 0; k < 8; ++k) {
        uint8_t* pair = base + 192 + 192 * k;
        for (int i = 0; i < 4; ++i) {
          int e[4], o[4];  // steps of sub-blocks 2k and 2k + 1 at column i
          for (int st = 0; st < 4; ++st) e[st] = q[32 * k + 4 * st + i], o[st] = q[32 * k + 16 + 4 * st + i];
          pair[4 * r + i] = static_cast<uint8_t>(e[0] | e[1] << 3 | (e[2] & 3) << 6);
          pair[64 + 4 * r + i] = static_cast<uint8_t>(e[3] | o[0] << 3 | (o[1] & 3) << 6);
          pair[128 + 4 * r + i] = static_cast<uint8_t>(o[2] | o[3] << 3 | (e[2] >> 2) << 6 | (o[1] >> 2) << 7);
        }
      }
    }
  }
}

// Level 0..63 of element e of a Q6_K super-block.
int q6_level(const BlockQ6_K& b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t ql = b.ql[64 * h + 32 * (k & 1) + l];
  const int low = k < 2 ? (ql & 0xF) : (ql >> 4);
  return low | (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4);
}

void pack_q6_k(const Source& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK_K;
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const BlockQ6_K*>(source_row(t, p, r));
    for (int64_t b = 0; b < nb; ++b) {
      set_f16(dst + paired_d_offset(b, paired_stripe_bytes(3328)) + 2 * r, src ? src[b].d : 0);
      uint8_t* base = dst + paired_q_offset(b, 3328, paired_stripe_bytes(3328));
      for (int j = 0; j < 16; ++j) base[16 * j + r] = static_cast<uint8_t>(src ? src[b].scales[j] : 0);
      int q[kQK_K];
      for (int e = 0; e < kQK_K; ++e) q[e] = src ? q6_level(src[b], e) : 32;
      for (int j = 0; j < 16; ++j) {
        uint8_t* a = base + 256 + 192 * j;
        const int* qj = q + 16 * j;
        for (int i = 0; i < 4; ++i) {
          a[4 * r + i] = static_cast<uint8_t>((qj[i] & 0xF) | ((qj[4 + i] & 0xF) << 4));
          a[64 + 4 * r + i] = static_cast<uint8_t>((qj[8 + i] & 0xF) | ((qj[12 + i] & 0xF) << 4));
          int c = 0;
          for (int s = 0; s < 4; ++s) c |= ((qj[4 * s + i] >> 4) & 3) << (2 * s);
          a[128 + 4 * r + i] = static_cast<uint8_t>(c);
        }
      }
    }
  }
}

}  // namespace

bool packed_kind_for(DType type, PackedKind* kind) {
  switch (type) {
    case DType::kF32: *kind = PackedKind::kF32; return true;
    case DType::kF16: *kind = PackedKind::kF16; return true;
    case DType::kBF16: *kind = PackedKind::kBF16; return true;
    case DType::kQ8_0: *kind = PackedKind::kQ8_0; return true;
    case DType::kQ4_0: *kind = PackedKind::kQ4_0; return true;
    case DType::kQ4_K: *kind = PackedKind::kQ4_K; return true;
    case DType::kQ6_K: *kind = PackedKind::kQ6_K; return true;
    case DType::kQ5_0: *kind = PackedKind::kQ5_0; return true;
    case DType::kQ5_1: *kind = PackedKind::kQ5_1; return true;
    case DType::kIQ4_NL: *kind = PackedKind::kIQ4_NL; return true;
    case DType::kQ5_K: *kind = PackedKind::kQ5_K; return true;
    case DType::kIQ4_XS: *kind = PackedKind::kIQ4_XS; return true;
    case DType::kQ3_K: *kind = PackedKind::kQ3_K; return true;
    default: return false;
  }
}

DType packed_kind_dtype(PackedKind kind) {
  constexpr DType kTypes[kNumPackedKinds] = {DType::kF32,  DType::kF16,  DType::kBF16,   DType::kQ8_0, DType::kQ4_0,
                                             DType::kQ4_K, DType::kQ6_K, DType::kQ5_0,   DType::kQ5_1, DType::kIQ4_NL,
                                             DType::kQ5_K, DType::kIQ4_XS, DType::kQ3_K};
  return kTypes[static_cast<int>(kind)];
}

void packed_geometry(PackedKind kind, int64_t rows, int64_t cols, PackedWeights* out) {
  out->kind = kind;
  out->rows = rows;
  out->cols = cols;
  out->num_panels = (rows + kPanelRows - 1) / kPanelRows;
  const int64_t nb32 = cols / kQK, nb256 = cols / kQK_K;
  auto paired = [&](int64_t blocks, int64_t q_bytes) {
    out->panel_bytes = paired_panel_bytes(blocks, q_bytes);
    out->stripe_bytes = paired_stripe_bytes(q_bytes);
  };
  auto per_block = [&](int64_t blocks, int64_t bytes) { out->panel_bytes = blocks * bytes, out->stripe_bytes = bytes; };
  switch (kind) {
    case PackedKind::kF32: out->panel_bytes = out->stripe_bytes = cols * 64; break;
    case PackedKind::kF16:
    case PackedKind::kBF16: out->panel_bytes = out->stripe_bytes = round_up(cols * 32, 64); break;
    case PackedKind::kQ8_0: paired(nb32, 512); break;
    case PackedKind::kQ4_0:
    case PackedKind::kIQ4_NL: paired(nb32, 256); break;
    case PackedKind::kQ5_0: paired(nb32, 320); break;
    case PackedKind::kQ5_1: per_block((nb32 + 1) / 2, 128 + 2 * 320); break;  // pairs led by d and m
    case PackedKind::kQ4_K: per_block(nb256, 2304); break;
    case PackedKind::kQ5_K: per_block(nb256, 2816); break;
    case PackedKind::kIQ4_XS: per_block(nb256, 2176); break;
    case PackedKind::kQ6_K: paired(nb256, 3328); break;
    case PackedKind::kQ3_K: paired(nb256, 1728); break;
  }
}

void pack_weights(const Tensor& t, PackedWeights* out, std::span<const int64_t> row_order) {
  LLMS_CHECK(row_order.empty() || static_cast<int64_t>(row_order.size()) == t.ne[1], "pack_weights: row order of the wrong length");
  const Source src{t, row_order, t.ne};
  PackedKind kind;
  LLMS_CHECK(packed_kind_for(t.dtype, &kind), "pack_weights: no kernel for this type");
  packed_geometry(kind, t.ne[1], t.ne[0], out);
  // Interleaved groups pay off only where a decode GEMV walks a whole group at once:
  // AVX2's tiles of 4 panels read half of every stripe and skip the other half, which
  // halved its GEMV rates from memory (Q8_0 35-52 -> 17 GB/s, Q4_0 26-41 -> 12-14).
  const bool quantized = kind != PackedKind::kF32 && kind != PackedKind::kF16 && kind != PackedKind::kBF16;
  out->interleaved = quantized && interleaves_panels(active_kernels().gemv_panels);
  out->data = PanelMemory::allocate(out->num_bytes());  // zeroed: padding rows and slots read as zero
  // Each panel is laid out contiguously here, then its stripes go to their places (in
  // the panel's group when interleaved).
  std::vector<uint8_t> panel(static_cast<size_t>(out->panel_bytes));
  for (int64_t p = 0; p < out->num_panels; ++p) {
    std::fill(panel.begin(), panel.end(), uint8_t{0});
    uint8_t* dst = panel.data();
    switch (kind) {
      case PackedKind::kF32: pack_plain<uint32_t>(src, p, dst); break;
      case PackedKind::kF16:
      case PackedKind::kBF16: pack_plain<uint16_t>(src, p, dst); break;
      case PackedKind::kQ8_0: pack_q8_0(src, p, dst); break;
      case PackedKind::kQ4_0: pack_q4_0<BlockQ4_0>(src, p, dst); break;
      case PackedKind::kIQ4_NL: pack_q4_0<BlockIQ4_NL>(src, p, dst); break;
      case PackedKind::kQ5_0: pack_q5<BlockQ5_0, false>(src, p, dst); break;
      case PackedKind::kQ5_1: pack_q5<BlockQ5_1, true>(src, p, dst); break;
      case PackedKind::kQ4_K: pack_q4_k(src, p, dst); break;
      case PackedKind::kQ5_K: pack_q5_k(src, p, dst); break;
      case PackedKind::kIQ4_XS: pack_iq4_xs(src, p, dst); break;
      case PackedKind::kQ6_K: pack_q6_k(src, p, dst); break;
      case PackedKind::kQ3_K: pack_q3_k(src, p, dst); break;
    }
    uint8_t* first = out->data.data() + (out->panel(p) - out->data.data());
    for (int64_t k = 0; k < out->panel_bytes / out->stripe_bytes; ++k) {
      std::memcpy(first + k * out->stride(p), dst + k * out->stripe_bytes, static_cast<size_t>(out->stripe_bytes));
    }
  }
}

}  // namespace llms
