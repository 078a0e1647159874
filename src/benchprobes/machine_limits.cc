#include "benchprobes/machine_limits.h"

#include <sys/mman.h>

#include <algorithm>
#include <vector>

#include "base/clock.h"
#include "benchprobes/throughput_probe.h"
#include "kernels/matmul.h"

namespace llms {
namespace {

constexpr int64_t kPiece = int64_t{4} << 20;
constexpr int64_t kAlign = 256 * 8;  // read_probe()'s granularity for 8 streams
constexpr int kPatterns[] = {1, 2, 4, 8};

}  // namespace

BandwidthProbe::BandwidthProbe(ThreadPool& pool, int64_t bytes)
    : pool_(pool), bytes_(std::max(kAlign, bytes / kAlign * kAlign)), buf_(bytes_, false) {
  madvise(buf_.data(), static_cast<size_t>(bytes_), MADV_HUGEPAGE);
  for (int64_t i = 0; i < bytes_; i += 4096) buf_.data()[i] = std::byte{1};  // fault pages in
}

double BandwidthProbe::read_range(int64_t offset, int64_t len, int streams) {
  // Pieces small enough that every thread gets some, large enough to stream.
  const int64_t piece = std::clamp<int64_t>(len / pool_.num_threads() / kAlign * kAlign, kAlign, kPiece);
  const int64_t n = (len + piece - 1) / piece;
  std::vector<uint64_t> sums(static_cast<size_t>(n));
  const Stopwatch w;
  pool_.parallel_for(n, 1, 0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t at = offset + i * piece;
      sums[static_cast<size_t>(i)] = read_probe(buf_.data() + at, std::min(piece, offset + len - at), streams);
    }
  });
  return w.elapsed_s();
}

double BandwidthProbe::pass_s(int streams) { return read_range(0, bytes_, streams); }

double BandwidthProbe::best_gb_s(int passes) {
  double best = 1e30;
  for (int streams : kPatterns) {
    for (int i = 0; i < passes; ++i) {
      const double s = pass_s(streams);
      if (s < best) best = s, streams_ = streams;
    }
  }
  return static_cast<double>(bytes_) / best / 1e9;
}

int64_t BandwidthProbe::read(int64_t bytes) {
  const int64_t len = std::clamp<int64_t>(bytes / kAlign * kAlign, kAlign, bytes_);
  if (offset_ + len > bytes_) offset_ = 0;
  last_s_ = read_range(offset_, len, streams_);
  offset_ += len;
  return len;
}

double peak_ops_per_s(ThreadPool& pool, PeakKind kind, int64_t rounds) {
  const int threads = pool.num_threads();
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> ops(static_cast<size_t>(threads));
    const Stopwatch w;
    pool.run(threads, [&](int t) {
      double& o = ops[static_cast<size_t>(t)];
      switch (kind) {
        case PeakKind::kFma: o = fma_probe(rounds); break;
        case PeakKind::kInt8Dot: o = int8_dot_probe(rounds); break;
        case PeakKind::kQ8_0Tile: o = q8_0_tile_probe(rounds / kQ8_0TileRound); break;
      }
    });
    const double s = w.elapsed_s();
    double total = 0;
    for (double o : ops) total += o;
    best = std::max(best, total / s);
  }
  return best;
}

}  // namespace llms
