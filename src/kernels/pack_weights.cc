// Rearranges GGUF rows into the panel layouts described in packed_weights.h. Runs
// once per tensor at load, so it is plain scalar code.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_weights.h"
#include "quant/block_formats.h"

namespace llms {
namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Row r of panel p, or null for the padding rows past the end of the matrix.
const uint8_t* source_row(const Tensor& t, int64_t p, int r) {
  const int64_t row = p * kPanelRows + r;
  return row < t.ne[1] ? t.row(row) : nullptr;
}

template <typename T>
void pack_plain(const Tensor& t, int64_t p, uint8_t* dst) {
  T* out = reinterpret_cast<T*>(dst);
  for (int r = 0; r < kPanelRows; ++r) {
    const T* src = reinterpret_cast<const T*>(source_row(t, p, r));
    for (int64_t k = 0; k < t.ne[0]; ++k) out[k * kPanelRows + r] = src ? src[k] : T{0};
  }
}

void set_f16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

void pack_q8_0(const Tensor& t, int64_t p, uint8_t* dst) {
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

void pack_q4_0(const Tensor& t, int64_t p, uint8_t* dst) {
  const int64_t nb = t.ne[0] / kQK;
  for (int r = 0; r < kPanelRows; ++r) {
    const auto* src = reinterpret_cast<const BlockQ4_0*>(source_row(t, p, r));
    for (int64_t b = 0; b < nb; ++b) {
      set_f16(dst + paired_d_offset(b, paired_stripe_bytes(256)) + 2 * r, src ? src[b].d : 0);
      uint8_t* body = dst + paired_q_offset(b, 256, paired_stripe_bytes(256));
      for (int u = 0; u < 4; ++u)
        for (int i = 0; i < 4; ++i) body[u * 64 + 4 * r + i] = src ? src[b].qs[4 * u + i] : 0x88;
    }
  }
}

void pack_q4_k(const Tensor& t, int64_t p, uint8_t* dst) {
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

// Level 0..63 of element e of a Q6_K super-block.
int q6_level(const BlockQ6_K& b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t ql = b.ql[64 * h + 32 * (k & 1) + l];
  const int low = k < 2 ? (ql & 0xF) : (ql >> 4);
  return low | (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4);
}

void pack_q6_k(const Tensor& t, int64_t p, uint8_t* dst) {
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
    default: return false;
  }
}

DType packed_kind_dtype(PackedKind kind) {
  constexpr DType kTypes[kNumPackedKinds] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                                             DType::kQ4_0, DType::kQ4_K, DType::kQ6_K};
  return kTypes[static_cast<int>(kind)];
}

void pack_weights(const Tensor& t, PackedWeights* out) {
  PackedKind kind;
  LLMS_CHECK(packed_kind_for(t.dtype, &kind), "pack_weights: no kernel for this type");
  const int64_t cols = t.ne[0], rows = t.ne[1];
  out->kind = kind;
  out->rows = rows;
  out->cols = cols;
  out->num_panels = (rows + kPanelRows - 1) / kPanelRows;
  const int64_t nb32 = cols / kQK, nb256 = cols / kQK_K;
  switch (kind) {
    case PackedKind::kF32: out->panel_bytes = out->stripe_bytes = cols * 64; break;
    case PackedKind::kF16:
    case PackedKind::kBF16: out->panel_bytes = out->stripe_bytes = round_up(cols * 32, 64); break;
    case PackedKind::kQ8_0:
      out->panel_bytes = paired_panel_bytes(nb32, 512);
      out->stripe_bytes = paired_stripe_bytes(512);
      break;
    case PackedKind::kQ4_0:
      out->panel_bytes = paired_panel_bytes(nb32, 256);
      out->stripe_bytes = paired_stripe_bytes(256);
      break;
    case PackedKind::kQ4_K: out->panel_bytes = nb256 * 2304, out->stripe_bytes = 2304; break;
    case PackedKind::kQ6_K:
      out->panel_bytes = paired_panel_bytes(nb256, 3328);
      out->stripe_bytes = paired_stripe_bytes(3328);
      break;
  }
  // Interleaved groups pay off only where a decode GEMV walks a whole group at once:
  // AVX2's tiles of 4 panels read half of every stripe and skip the other half, which
  // halved its GEMV rates from memory (Q8_0 35-52 -> 17 GB/s, Q4_0 26-41 -> 12-14).
  const bool quantized = kind == PackedKind::kQ8_0 || kind == PackedKind::kQ4_0 || kind == PackedKind::kQ4_K ||
                         kind == PackedKind::kQ6_K;
  out->interleaved = quantized && interleaves_panels(active_kernels().gemv_panels);
  out->data = PanelMemory::allocate(out->num_bytes());  // zeroed: padding rows and slots read as zero
  // Each panel is laid out contiguously here, then its stripes go to their places (in
  // the panel's group when interleaved).
  std::vector<uint8_t> panel(static_cast<size_t>(out->panel_bytes));
  for (int64_t p = 0; p < out->num_panels; ++p) {
    std::fill(panel.begin(), panel.end(), uint8_t{0});
    uint8_t* dst = panel.data();
    switch (kind) {
      case PackedKind::kF32: pack_plain<uint32_t>(t, p, dst); break;
      case PackedKind::kF16:
      case PackedKind::kBF16: pack_plain<uint16_t>(t, p, dst); break;
      case PackedKind::kQ8_0: pack_q8_0(t, p, dst); break;
      case PackedKind::kQ4_0: pack_q4_0(t, p, dst); break;
      case PackedKind::kQ4_K: pack_q4_k(t, p, dst); break;
      case PackedKind::kQ6_K: pack_q6_k(t, p, dst); break;
    }
    uint8_t* first = out->data.data() + (out->panel(p) - out->data.data());
    for (int64_t k = 0; k < out->panel_bytes / out->stripe_bytes; ++k) {
      std::memcpy(first + k * out->stride(p), dst + k * out->stripe_bytes, static_cast<size_t>(out->stripe_bytes));
    }
  }
}

}  // namespace llms
