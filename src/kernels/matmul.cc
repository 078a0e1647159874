// Front end of matmul.h: prepares the activations the weight kind needs, then splits
// the panels of W across the pool and runs the active target's kernel on each range.
#include "kernels/matmul.h"

#include <limits>

#include "base/aligned_buffer.h"
#include "kernels/kernel_table.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// Below this many multiply-adds a product runs on the calling thread: waking the
// workers costs more than it saves.
constexpr int64_t kMinParallelMacs = 1 << 16;
// Threads take panels in groups of this many (GEMV tiles are up to 8 panels wide).
constexpr int64_t kPanelAlign = 4;
// Quantizing activations is split across the pool from this many tokens.
constexpr int64_t kMinParallelTokens = 64;

// Per calling thread, grown on demand and reused: matmul never allocates in steady
// state.
struct ActivationScratch {
  AlignedBuffer q, d, corr, pairs;
};

void ensure(AlignedBuffer& b, int64_t bytes) {
  if (static_cast<int64_t>(b.size()) < bytes) b.resize(static_cast<size_t>(bytes), false);
}

QuantizedActivations quantize_activations(const KernelTable& k, bool k_blocks, int bias, const float* x, int64_t n,
                                          int64_t cols, ThreadPool& pool) {
  thread_local ActivationScratch s;
  const int64_t block = k_blocks ? 256 : 32, corr_block = k_blocks ? 16 : 32;
  ensure(s.q, n * cols);
  ensure(s.d, n * (cols / block) * 4);
  ensure(s.corr, n * (cols / corr_block) * 4);
  if (k_blocks) ensure(s.pairs, n * (cols / 64) * 4);
  QuantizedActivations a;
  a.n = n;
  a.cols = cols;
  a.q = s.q.as<int8_t>();
  a.d = s.d.as<float>();
  a.corr = s.corr.as<int32_t>();
  a.pairs = k_blocks ? s.pairs.as<int32_t>() : nullptr;
  const QuantizeRowFn fn = k_blocks ? k.quantize_k_row : k.quantize_q8_row;
  pool.parallel_for(n, 1, kMinParallelTokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) fn(x, t, bias, a);
  });
  return a;
}

}  // namespace

bool matmul_supports(DType type) { return can_dequantize(type); }

void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  if (n <= 0) return;
  const PackedWeights& pw = w.packed();
  const KernelTable& k = active_kernels();
  MatmulCall call;
  call.w = &pw;
  call.n = n;
  call.y = y;
  QuantizedActivations qa;
  switch (pw.kind) {
    case PackedKind::kF32:
    case PackedKind::kF16:
    case PackedKind::kBF16: call.x = x; break;
    case PackedKind::kQ8_0: qa = quantize_activations(k, false, k.q8_0_bias, x, n, pw.cols, pool); break;
    case PackedKind::kQ4_0: qa = quantize_activations(k, false, 8, x, n, pw.cols, pool); break;
    case PackedKind::kQ4_K:
    case PackedKind::kQ6_K: qa = quantize_activations(k, true, 0, x, n, pw.cols, pool); break;
  }
  if (call.x == nullptr) call.x = &qa;
  const MatmulFn fn = k.matmul[static_cast<int>(pw.kind)];
  const int64_t macs = pw.num_panels * kPanelRows * pw.cols * n;
  const int64_t min_parallel = macs < kMinParallelMacs ? std::numeric_limits<int64_t>::max() : 0;
  // Ranges of whole groups of kPanelAlign panels keep the GEMV tiles wide.
  pool.parallel_for(pw.num_panels, kPanelAlign, min_parallel, [&](int64_t p0, int64_t p1) {
    MatmulCall part = call;
    part.panel_begin = p0;
    part.panel_end = p1;
    fn(part);
  });
}

}  // namespace llms
