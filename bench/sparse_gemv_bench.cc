// Does a block-sparse Q8_0 GEMV (bench/sparse_gemv.h) beat the dense quantized GEMV
// of the product (kernels/matmul.h) on this machine? One thread each, all variants
// timed interleaved in the same run (round-robin, the order rotating every round), and
// reported as the median over rounds of each variant's time relative to dense Q8_0
// measured in the same round.
//
//   sparse_gemv_bench [--rounds N] [--rotate-mib M]
//
// Variants, on the same [rows, cols] Gaussian matrix:
//   q8_0 dense, q4_0 dense   the product's kernels (kernels/matmul.h, SIMD target as
//                            dispatched), on the unpruned matrix
//   bitmap 0%                this file's kernel with every block stored (its own
//                            dense baseline: format overhead without sparsity)
//   bitmap S                 the matrix with round(S * cols / 32) random 32-blocks of
//                            each row zeroed (what prune --pattern block:32 makes)
// Shapes: TinyLlama-1.1B's FFN (5632 x 2048) rotating over copies larger than the
// last-level cache (decode reads weights from memory), and 1024 x 2048 in cache.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/random.h"
#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/simd_target.h"
#include "quant/row_convert.h"
#include "sparse_gemv.h"

namespace llms::bench {
namespace {

struct Variant {
  std::string name;
  int64_t bytes = 0;                    // of one copy
  std::function<void(size_t copy)> run; // one GEMV on copy `copy`
  size_t copies = 1;                    // GEMVs per round, over the copies in turn
  std::vector<double> ns;               // per GEMV, one entry per round
};

std::vector<float> gaussian_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (auto& v : w) v = static_cast<float>(rng.normal() * 0.02);
  return w;
}

// Zeroes round(s * blocks) random 32-blocks of each row.
std::vector<float> block_pruned(std::vector<float> w, int64_t rows, int64_t cols, double s, uint64_t seed) {
  Rng rng(seed);
  const int64_t nb = cols / 32, k = std::llround(s * static_cast<double>(nb));
  std::vector<int64_t> order(static_cast<size_t>(nb));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) order[b] = b;
    for (int64_t i = nb - 1; i > 0; --i) std::swap(order[i], order[rng.next_u64() % static_cast<uint64_t>(i + 1)]);
    for (int64_t i = 0; i < k; ++i) std::fill_n(w.begin() + r * cols + order[i] * 32, 32, 0.0f);
  }
  return w;
}

std::vector<uint8_t> quantized(DType type, const std::vector<float>& w, int64_t rows, int64_t cols) {
  const int64_t rb = dtype_row_bytes(type, cols);
  std::vector<uint8_t> out(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r) quantize_row(type, w.data() + r * cols, out.data() + r * rb, cols);
  return out;
}

size_t copies_for(int64_t bytes, int64_t rotate) { return static_cast<size_t>(std::max<int64_t>(1, (rotate + bytes - 1) / bytes)); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Checks this file's kernel against its scalar reference and against the product's
// Q8_0 kernel on the same matrix (the same arithmetic up to float rounding). Returns
// false (and says why) when they disagree.
bool check(const SparseQ8Matrix& m, const Q8Activations& xq, const std::vector<float>& dense_y) {
  std::vector<float> a(static_cast<size_t>(m.rows)), b(a.size());
  sparse_gemv_reference(m, xq, a.data());
  sparse_gemv_avx2(m, xq, b.data());
  double scale = 0, worst = 0, worst_dense = 0;
  for (size_t i = 0; i < a.size(); ++i) scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / scale);
    if (!dense_y.empty()) worst_dense = std::max(worst_dense, std::fabs(static_cast<double>(a[i]) - dense_y[i]) / scale);
  }
  if (dense_y.empty()) {
    std::printf("  check: avx2 vs reference max error %.2e (of max |y|)\n", worst);
  } else {
    std::printf("  check: avx2 vs reference max error %.2e, vs product q8_0 %.2e (of max |y|)\n", worst, worst_dense);
  }
  return worst < 1e-5 && worst_dense < 1e-2;
}

void run_shape(int64_t rows, int64_t cols, int64_t rotate, int rounds, ThreadPool& pool) {
  std::printf("\nshape %lld x %lld, %s\n", static_cast<long long>(rows), static_cast<long long>(cols),
              rotate > 0 ? "rotating over copies beyond the last-level cache" : "one copy, in cache");
  const std::vector<float> w = gaussian_matrix(rows, cols, 1);
  const std::vector<float> x = gaussian_matrix(1, cols, 2);
  std::vector<float> y(static_cast<size_t>(rows));
  std::vector<Variant> variants;

  auto sources = std::make_shared<std::vector<std::vector<uint8_t>>>();
  std::vector<float> q8_y;
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    sources->push_back(quantized(type, w, rows, cols));
    Tensor t;
    t.dtype = type;
    t.n_dims = 2;
    t.ne = {cols, rows, 1, 1};
    t.data = sources->back().data();
    auto mats = std::make_shared<std::vector<WeightMatrix>>();
    mats->push_back(WeightMatrix::from_tensor(t, "bench").value());
    const size_t n = rotate > 0 ? copies_for(mats->front().packed_bytes(), rotate) : 1;
    while (mats->size() < n) mats->push_back(WeightMatrix::from_tensor(t, "bench").value());
    if (type == DType::kQ8_0) {
      q8_y.resize(static_cast<size_t>(rows));
      matmul(mats->front(), x.data(), 1, q8_y.data(), pool);
    }
    variants.push_back({std::string(dtype_name(type)) + " dense (product)", mats->front().packed_bytes(),
                        [mats, &x, &y, &pool](size_t i) { matmul((*mats)[i % mats->size()], x.data(), 1, y.data(), pool); },
                        std::max<size_t>(n, 32), {}});
  }
  auto xq = std::make_shared<Q8Activations>();
  quantize_activations(x.data(), cols, *xq);
  for (double s : {0.0, 0.5, 0.7}) {
    const std::vector<float> pruned = s > 0 ? block_pruned(w, rows, cols, s, 3) : w;
    const std::vector<uint8_t> q8 = quantized(DType::kQ8_0, pruned, rows, cols);
    auto mats = std::make_shared<std::vector<SparseQ8Matrix>>();
    mats->push_back(sparse_from_q8_0(q8.data(), rows, cols));
    std::printf("  bitmap %.0f%%: %.3f bits per weight (q8_0 8.5, q4_0 4.5)\n", 100 * s,
                8.0 * static_cast<double>(mats->front().bytes()) / static_cast<double>(rows * cols));
    if (!check(mats->front(), *xq, s == 0 ? q8_y : std::vector<float>{})) {
      std::fprintf(stderr, "error: the AVX2 kernel disagrees with its reference\n");
      std::exit(1);
    }
    const size_t n = rotate > 0 ? copies_for(mats->front().bytes(), rotate) : 1;
    while (mats->size() < n) mats->push_back(mats->front());
    variants.push_back({"bitmap " + std::to_string(static_cast<int>(std::lround(100 * s))) + "% (bench kernel)",
                        mats->front().bytes(),
                        [mats, &x, &y, cols](size_t i) {
                          thread_local Q8Activations a;
                          quantize_activations(x.data(), cols, a);
                          sparse_gemv_avx2((*mats)[i % mats->size()], a, y.data());
                        },
                        std::max<size_t>(n, 32), {}});
  }

  for (int round = 0; round < rounds + 1; ++round) {
    for (size_t j = 0; j < variants.size(); ++j) {
      Variant& v = variants[(j + static_cast<size_t>(round)) % variants.size()];
      const int64_t t0 = now_ns();
      for (size_t i = 0; i < v.copies; ++i) v.run(i);
      const int64_t t1 = now_ns();
      if (round > 0) v.ns.push_back(static_cast<double>(t1 - t0) / static_cast<double>(v.copies));  // round 0 warms up
    }
  }
  std::printf("| kernel | bytes/matrix | median us/GEMV | GB/s | time vs q8_0 dense (median of per-round ratios) |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const Variant& v : variants) {
    std::vector<double> ratio;
    for (size_t r = 0; r < v.ns.size(); ++r) ratio.push_back(v.ns[r] / variants[0].ns[r]);
    const double us = median(v.ns) / 1e3;
    std::printf("| %s | %lld | %.1f | %.1f | %.3f |\n", v.name.c_str(), static_cast<long long>(v.bytes), us,
                static_cast<double>(v.bytes) / (us * 1e3), median(ratio));
  }
}

}  // namespace
}  // namespace llms::bench

int main(int argc, char** argv) {
  int rounds = 15;
  int64_t rotate_mib = 512;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--rotate-mib") rotate_mib = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: sparse_gemv_bench [--rounds N] [--rotate-mib M]\n");
      return 2;
    }
  }
  if (!llms::bench::sparse_gemv_avx2_available()) {
    std::fprintf(stderr, "error: this benchmark's kernel needs AVX2, FMA and F16C\n");
    return 1;
  }
  llms::ThreadPool pool(1);
  std::printf("one thread; product kernels on SIMD target %s; %d rounds\n", llms::simd_target_name(), rounds);
  llms::bench::run_shape(5632, 2048, rotate_mib << 20, rounds, pool);
  llms::bench::run_shape(1024, 2048, 0, rounds, pool);
  return 0;
}
