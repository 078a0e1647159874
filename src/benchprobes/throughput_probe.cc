#include "benchprobes/throughput_probe.h"

#include <cstring>

#include "kernels/simd_target.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace llms {
namespace {

// XOR of a vector's 64-bit words: a checksum with no arithmetic to overflow.
template <typename V>
uint64_t fold(const V& v) {
  uint64_t w[sizeof(V) / 8];
  std::memcpy(w, &v, sizeof(V));
  uint64_t s = 0;
  for (uint64_t x : w) s ^= x;
  return s;
}

uint64_t read_scalar(const void* p, int64_t bytes) {
  const auto* u = static_cast<const uint64_t*>(p);
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (int64_t i = 0; i < bytes / 8; i += 4) a ^= u[i], b ^= u[i + 1], c ^= u[i + 2], d ^= u[i + 3];
  return a ^ b ^ c ^ d;
}

double fma_scalar(int64_t rounds) {
  float acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = static_cast<float>(i);
  for (int64_t r = 0; r < rounds; ++r)
    for (float& a : acc) a = a * 0.999f + 0.001f;
  volatile float sink = acc[0] + acc[11];
  (void)sink;
  return 2.0 * 12 * static_cast<double>(rounds);
}

double int8_scalar(int64_t rounds) {
  int32_t acc[12] = {};
  for (int64_t r = 0; r < rounds; ++r)
    for (int i = 0; i < 12; ++i) acc[i] += static_cast<int8_t>(r + i) * 3;
  volatile int32_t sink = acc[0] + acc[11];
  (void)sink;
  return 12.0 * static_cast<double>(rounds);
}

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then reports.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// S streams of 64-byte lines, each prefetched kAhead bytes ahead when S > 1.
constexpr int64_t kAhead = 1024;

template <int S>
__attribute__((target("avx2"))) uint64_t read_avx2(const uint8_t* p, int64_t bytes) {
  const int64_t part = bytes / S;
  __m256i acc[S];
  for (auto& a : acc) a = _mm256_setzero_si256();
  for (int64_t i = 0; i < part; i += 64) {
    for (int s = 0; s < S; ++s) {
      const uint8_t* q = p + s * part + i;
      if (S > 1) __builtin_prefetch(q + kAhead, 0, 3);
      acc[s] = _mm256_xor_si256(acc[s], _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(q)),
                                                         _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32))));
    }
  }
  __m256i x = acc[0];
  for (int s = 1; s < S; ++s) x = _mm256_xor_si256(x, acc[s]);
  return static_cast<uint64_t>(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 3));
}

template <int S>
__attribute__((target("avx512f"))) uint64_t read_avx512(const uint8_t* p, int64_t bytes) {
  const int64_t part = bytes / S;
  __m512i acc[S];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (int64_t i = 0; i < part; i += 64) {
    for (int s = 0; s < S; ++s) {
      const uint8_t* q = p + s * part + i;
      if (S > 1) __builtin_prefetch(q + kAhead, 0, 3);
      acc[s] = _mm512_xor_si512(acc[s], _mm512_load_si512(q));
    }
  }
  __m512i x = acc[0];
  for (int s = 1; s < S; ++s) x = _mm512_xor_si512(x, acc[s]);
  return fold(x);
}

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t rounds) {
  __m256 acc[12];
  for (auto& a : acc) a = _mm256_set1_ps(1.0f);
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], _mm256_set1_ps(0.999f), _mm256_set1_ps(0.001f));
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  volatile float sink = _mm256_cvtss_f32(s);
  (void)sink;
  return 2.0 * 8 * 12 * static_cast<double>(rounds);
}

__attribute__((target("avx512f"))) double fma_avx512(int64_t rounds) {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_set1_ps(1.0f);
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], _mm512_set1_ps(0.999f), _mm512_set1_ps(0.001f));
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return 2.0 * 16 * 12 * static_cast<double>(rounds);
}

__attribute__((target("avx2"))) double int8_avx2(int64_t rounds) {
  // Distinct weight vectors, hidden from the optimizer every round, so each chain
  // really runs maddubs + madd + add as the kernels do (6 chains: 16 ymm registers).
  __m256i acc[6], w[6];
  for (int i = 0; i < 6; ++i) acc[i] = _mm256_setzero_si256(), w[i] = _mm256_set1_epi8(static_cast<char>(i + 1));
  const __m256i s = _mm256_set1_epi8(-5), ones = _mm256_set1_epi16(1);
  for (int64_t r = 0; r < rounds; ++r) {
    __asm__ volatile("" : "+x"(w[0]), "+x"(w[1]), "+x"(w[2]), "+x"(w[3]), "+x"(w[4]), "+x"(w[5]));
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(w[i], s), ones));
  }
  __m256i x = acc[0];
  for (int i = 1; i < 6; ++i) x = _mm256_add_epi32(x, acc[i]);
  volatile int sink = _mm256_extract_epi32(x, 0);
  (void)sink;
  return 32.0 * 6 * static_cast<double>(rounds);
}

__attribute__((target("avx512f,avx512vnni"))) double int8_avx512(int64_t rounds) {
  __m512i acc[12];
  for (auto& a : acc) a = _mm512_setzero_si512();
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-5);
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, s);
  }
  __m512i x = acc[0];
  for (int i = 1; i < 12; ++i) x = _mm512_xor_si512(x, acc[i]);
  volatile uint64_t sink = fold(x);
  (void)sink;
  return 64.0 * 12 * static_cast<double>(rounds);
}
#pragma GCC diagnostic pop
#endif

}  // namespace

uint64_t read_probe(const void* p, int64_t bytes, int streams) {
  const auto* b = static_cast<const uint8_t*>(p);
#if defined(__x86_64__)
  const SimdTarget t = active_simd_target();
  if (t != SimdTarget::kScalar) {
    switch (streams) {
      case 2: return t == SimdTarget::kAvx512 ? read_avx512<2>(b, bytes) : read_avx2<2>(b, bytes);
      case 4: return t == SimdTarget::kAvx512 ? read_avx512<4>(b, bytes) : read_avx2<4>(b, bytes);
      case 8: return t == SimdTarget::kAvx512 ? read_avx512<8>(b, bytes) : read_avx2<8>(b, bytes);
      default: return t == SimdTarget::kAvx512 ? read_avx512<1>(b, bytes) : read_avx2<1>(b, bytes);
    }
  }
#endif
  return read_scalar(b, bytes);
}

double fma_probe(int64_t rounds) {
#if defined(__x86_64__)
  switch (active_simd_target()) {
    case SimdTarget::kAvx512: return fma_avx512(rounds);
    case SimdTarget::kAvx2: return fma_avx2(rounds);
    case SimdTarget::kScalar: break;
  }
#endif
  return fma_scalar(rounds);
}

double int8_dot_probe(int64_t rounds) {
#if defined(__x86_64__)
  switch (active_simd_target()) {
    case SimdTarget::kAvx512: return int8_avx512(rounds);
    case SimdTarget::kAvx2: return int8_avx2(rounds);
    case SimdTarget::kScalar: break;
  }
#endif
  return int8_scalar(rounds);
}

}  // namespace llms
