// The machine's limits, measured, for benchmarks that report kernels as a share of
// what the hardware can do: sustained memory read bandwidth of a thread pool, and
// the peak rate of the multiply-add instructions the matmul kernels are built on.
// Built on the single-thread probes of throughput_probe.h.
//
// Thread-safety: a BandwidthProbe belongs to one thread at a time (it drives the
// pool); peak_ops_per_s() likewise.
#pragma once

#include <cstdint>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"

namespace llms {

// Reads a buffer far beyond every cache with all threads of a pool at once, the way
// matmul panels are shared out (pieces of up to 4 MiB claimed by the threads).
class BandwidthProbe {
 public:
  // Allocates `bytes` (over huge pages where the system grants them) and faults them in.
  BandwidthProbe(ThreadPool& pool, int64_t bytes);

  int64_t bytes() const { return bytes_; }
  // One pass over the whole buffer, every piece read as `streams` (1, 2, 4 or 8)
  // side-by-side parts; returns seconds.
  double pass_s(int streams);
  // The best of `passes` passes of every access pattern, in GB/s; the fastest
  // pattern becomes the one read() uses.
  double best_gb_s(int passes);
  // Reads about `bytes` (the next slice of the buffer, wrapping around) with the
  // fastest pattern found so far; returns the bytes read, last_s() the seconds.
  int64_t read(int64_t bytes);
  double last_s() const { return last_s_; }

 private:
  double read_range(int64_t offset, int64_t len, int streams);

  ThreadPool& pool_;
  int64_t bytes_;
  AlignedBuffer buf_;
  int64_t offset_ = 0;
  int streams_ = 1;
  double last_s_ = 0;
};

enum class PeakKind {
  kFma,      // float FMA chains; counts floating-point operations (2 per lane per FMA)
  kInt8Dot,  // the int8 dot product of the integer kernels; counts int8 multiply-adds
  // The Q8_0 GEMM tile's arithmetic with its blocks in the first-level cache: the
  // int8 dots of each block, then its scale step (a conversion, a multiply and an
  // FMA per lane). The ceiling of a Q8_0 product; counts int8 multiply-adds. One of
  // its rounds is kQ8_0TileRound rounds of kInt8Dot.
  kQ8_0Tile,
};
inline constexpr int64_t kQ8_0TileRound = 64;

// Operations per second of `kind` on every pool thread at once: the best of three
// runs of `rounds` rounds per thread, counted in rounds of kInt8Dot for kQ8_0Tile
// (so that the same `rounds` takes about as long for every kind).
double peak_ops_per_s(ThreadPool& pool, PeakKind kind, int64_t rounds);

}  // namespace llms
