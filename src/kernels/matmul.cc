// Front end of matmul.h: prepares the activations the weight kind needs, then splits
// the panels of W across the pool and runs the active target's kernel on each range.
#include "kernels/matmul.h"

#include <algorithm>
#include <limits>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "kernels/kernel_table.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// Below this many multiply-adds a product runs on the calling thread: waking the
// workers costs more than it saves.
constexpr int64_t kMinParallelMacs = 1 << 16;
// Decode threads take whole groups of interleaved panels (GEMV tiles are up to 8
// panels wide); GEMM tiles are at most 2 panels wide, and finer ranges let the
// threads finish together (a split changes no result: each panel's outputs are
// computed whole by one thread).
constexpr int64_t kPanelAlign = kGroupPanels;
constexpr int64_t kGemmPanelAlign = 2;
// Quantizing activations is split across the pool from this many tokens, in ranges
// that start at multiples of kTokenAlign: the per-block scales of 16 consecutive
// tokens share a cache line (d[b * n + t]), and two threads writing one line would
// pass it back and forth (at n = 64 that made quantizing cost half the product).
constexpr int64_t kMinParallelTokens = 64;
constexpr int64_t kTokenAlign = 16;

// Per calling thread and activation format, grown on demand and reused: matmul never
// allocates in steady state.
struct ActivationScratch {
  AlignedBuffer q, d, corr, s, pairs;
};

void ensure(AlignedBuffer& b, int64_t bytes) {
  if (static_cast<int64_t>(b.size()) < bytes) b.resize(static_cast<size_t>(bytes), false);
}

// How a weight kind wants its activations: float (F32, BF16), float rounded to F16
// (F16: GGML's F16 products), or quantized in blocks of 32 with a bias (Q8_0 and
// IQ4_NL: the Q8_0 bias; Q4_0, Q5_0, Q5_1: 8) or in 256-value super-blocks
// (k-quants, IQ4_XS). Kinds with the same format share one preparation of x.
enum class ActFormat { kFloat = 0, kQ8Blocks, kQ4Blocks, kKBlocks, kHalf };
constexpr int kNumActFormats = 5;

ActFormat act_format(PackedKind kind) {
  switch (kind) {
    case PackedKind::kF32:
    case PackedKind::kBF16: return ActFormat::kFloat;
    case PackedKind::kF16: return ActFormat::kHalf;
    case PackedKind::kQ8_0:
    case PackedKind::kIQ4_NL: return ActFormat::kQ8Blocks;
    case PackedKind::kQ4_0:
    case PackedKind::kQ5_0:
    case PackedKind::kQ5_1: return ActFormat::kQ4Blocks;
    case PackedKind::kQ4_K:
    case PackedKind::kQ5_K:
    case PackedKind::kQ6_K:
    case PackedKind::kIQ4_XS:
    case PackedKind::kQ3_K: return ActFormat::kKBlocks;
  }
  return ActFormat::kFloat;
}

QuantizedActivations quantize_activations(const KernelTable& k, ActFormat format, const float* x, int64_t n,
                                          int64_t cols, ThreadPool& pool) {
  thread_local ActivationScratch scratch[kNumActFormats];
  ActivationScratch& s = scratch[static_cast<int>(format)];
  const bool k_blocks = format == ActFormat::kKBlocks;
  const int bias = format == ActFormat::kQ8Blocks ? k.q8_0_bias : format == ActFormat::kQ4Blocks ? 8 : 0;
  const int64_t block = k_blocks ? 256 : 32, corr_block = k_blocks ? 16 : 32;
  const int64_t slack = kTileSlackTokens;
  ensure(s.q, n * cols + slack * block);
  ensure(s.d, (n * (cols / block) + slack) * 4);
  ensure(s.corr, (n * (cols / corr_block) + slack * (block / corr_block)) * 4);
  if (k_blocks) ensure(s.pairs, (n * (cols / 64) + slack * 4) * 4);
  if (!k_blocks) ensure(s.s, (n * (cols / block) + slack) * 4);
  QuantizedActivations a;
  a.n = n;
  a.cols = cols;
  a.q = s.q.as<int8_t>();
  a.d = s.d.as<float>();
  a.corr = s.corr.as<int32_t>();
  a.pairs = k_blocks ? s.pairs.as<int32_t>() : nullptr;
  a.s = k_blocks ? nullptr : s.s.as<float>();
  const QuantizeRowFn fn = k_blocks ? k.quantize_k_row : k.quantize_q8_row;
  pool.parallel_for(n, kTokenAlign, kMinParallelTokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) fn(x, t, bias, a);
  });
  return a;
}

// F16 weights take their activations rounded to F16, as GGML's F16 products do; split
// by tokens across the pool from kMinParallelTokens, as quantization is.
const float* round_to_half(const KernelTable& k, const float* x, int64_t n, int64_t cols, ThreadPool& pool) {
  thread_local AlignedBuffer scratch;
  ensure(scratch, n * cols * 4);
  float* out = scratch.as<float>();
  pool.parallel_for(n, 1, kMinParallelTokens, [&](int64_t t0, int64_t t1) {
    k.round_f16_row(x + t0 * cols, out + t0 * cols, (t1 - t0) * cols);
  });
  return out;
}

}  // namespace

bool matmul_supports(DType type) { return can_dequantize(type); }

void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  const MatmulOutput out{&w, y};
  matmul_shared_input({&out, 1}, x, n, pool);
}

void matmul_shared_input(std::span<const MatmulOutput> outs, const float* x, int64_t n, ThreadPool& pool) {
  if (n <= 0 || outs.empty()) return;
  const KernelTable& k = active_kernels();
  // Each activation format once, then one call per output with its panels' offset in
  // the concatenation of all outputs' panels.
  constexpr int kMaxOutputs = 8;
  LLMS_CHECK(outs.size() <= kMaxOutputs, "matmul_shared_input: too many outputs");
  QuantizedActivations qa[kNumActFormats];
  bool quantized[kNumActFormats] = {};
  const float* half_x = nullptr;
  MatmulCall calls[kMaxOutputs];
  int64_t first_panel[kMaxOutputs + 1] = {0};
  int64_t macs = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    const PackedWeights& pw = outs[i].w->packed();
    LLMS_CHECK(pw.cols == outs[0].w->packed().cols, "matmul_shared_input: outputs differ in columns");
    const ActFormat f = act_format(pw.kind);
    const int fi = static_cast<int>(f);
    if (f == ActFormat::kHalf && half_x == nullptr) {
      half_x = round_to_half(k, x, n, pw.cols, pool);
    } else if (f != ActFormat::kFloat && f != ActFormat::kHalf && !quantized[fi]) {
      qa[fi] = quantize_activations(k, f, x, n, pw.cols, pool);
      quantized[fi] = true;
    }
    MatmulCall& call = calls[i];
    call.w = &pw;
    call.n = n;
    call.y = outs[i].y;
    call.x = f == ActFormat::kFloat  ? static_cast<const void*>(x)
             : f == ActFormat::kHalf ? static_cast<const void*>(half_x)
                                     : &qa[fi];
    first_panel[i + 1] = first_panel[i] + pw.num_panels;
    macs += pw.num_panels * kPanelRows * pw.cols * n;
  }
  const int64_t total = first_panel[outs.size()];
  const int64_t min_parallel = macs < kMinParallelMacs ? std::numeric_limits<int64_t>::max() : 0;
  pool.parallel_for(total, n == 1 ? kPanelAlign : kGemmPanelAlign, min_parallel, [&](int64_t p0, int64_t p1) {
    for (size_t i = 0; i < outs.size(); ++i) {
      const int64_t b = std::max(p0, first_panel[i]), e = std::min(p1, first_panel[i + 1]);
      if (b >= e) continue;
      MatmulCall part = calls[i];
      part.panel_begin = b - first_panel[i];
      part.panel_end = e - first_panel[i];
      k.matmul[static_cast<int>(part.w->kind)](part);
    }
  });

}

double q8_0_tile_probe(int64_t rounds) { return active_kernels().q8_0_tile_probe(rounds); }

}  // namespace llms
