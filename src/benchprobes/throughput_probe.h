// Probes of the machine's limits, for benchmarks that report kernels as a share of
// what the hardware can do: sustained memory read bandwidth, and the peak rate of the
// multiply-add instructions the matmul kernels are built on, on the active target.
//
// Thread-safety: pure functions; run one per thread to measure several cores.
#pragma once

#include <cstdint>

namespace llms {

// Reads [p, p + bytes) once with the widest loads and returns a checksum so the reads
// cannot be optimized away. The range is read as `streams` (1, 2, 4 or 8) equal
// parts side by side, each with software prefetch when streams > 1: benchmarks take
// the best pattern as the machine's read bandwidth. bytes must be a multiple of
// 256 * streams and p 64-byte aligned.
uint64_t read_probe(const void* p, int64_t bytes, int streams = 1);

// Runs `rounds` rounds of independent float FMA chains on full vectors; returns
// the floating-point operations done (2 per lane per FMA).
double fma_probe(int64_t rounds);

// As fma_probe() for the int8 dot product of the integer kernels (VNNI dpbusd on
// AVX-512, maddubs + madd + add on AVX2, plain multiply-adds on scalar); returns the
// int8 multiply-adds done.
double int8_dot_probe(int64_t rounds);

}  // namespace llms
