// Q4_K weights against K activations (blocks of 256). Per lane (row r, token t) and
// super-block, in order:
//   isum = sum_j sc_j * sum_{i in j} q_w[i] * q_x[i]   (8 sub-blocks of 32, exact)
//   msum = sum_j m_j * sum_{i in j} q_x[i]             (exact)
//   acc  = fma(float(isum), d * d_x, acc)
//   acc  = acc - float(msum) * (dmin * d_x)            (one rounding: fnma)
// Spliced into a target namespace after matmul_tiles-inl.h.

// pshufb patterns: byte j of each dword to its low byte, zero elsewhere; and bytes
// (0, 1) or (2, 3) of each dword widened to two int16.
alignas(16) inline constexpr int8_t kByteOfDword[4][16] = {
    {0, -128, -128, -128, 4, -128, -128, -128, 8, -128, -128, -128, 12, -128, -128, -128},
    {1, -128, -128, -128, 5, -128, -128, -128, 9, -128, -128, -128, 13, -128, -128, -128},
    {2, -128, -128, -128, 6, -128, -128, -128, 10, -128, -128, -128, 14, -128, -128, -128},
    {3, -128, -128, -128, 7, -128, -128, -128, 11, -128, -128, -128, 15, -128, -128, -128}};
alignas(16) inline constexpr int8_t kPairOfDword[2][16] = {
    {0, -128, 1, -128, 4, -128, 5, -128, 8, -128, 9, -128, 12, -128, 13, -128},
    {2, -128, 3, -128, 6, -128, 7, -128, 10, -128, 11, -128, 14, -128, 15, -128}};

// The 12 scale bytes of 16 rows (three vectors, see packed_weights.h) to sc_j as int32
// per row and (m_2i, m_2i+1) as int16 pairs per row.
LLMS_SIMD void unpack_q4k_scales(const uint8_t* s, VI* sc, VI* mins) {
  const VI z0 = load_i(s), z1 = load_i(s + 64), z2 = load_i(s + 128);
  const VI low6 = set1_i32(0x3F3F3F3F), low4 = set1_i32(0x0F0F0F0F), bits45 = set1_i32(0x30303030);
  const VI sc03 = and_i(z0, low6), m03 = and_i(z1, low6);
  const VI sc47 = or_i(and_i(z2, low4), and_i(srli_i32<2>(z0), bits45));
  const VI m47 = or_i(and_i(srli_i32<4>(z2), low4), and_i(srli_i32<2>(z1), bits45));
  for (int j = 0; j < 4; ++j) {
    const VI pattern = bytes_pattern(kByteOfDword[j]);
    sc[j] = shuffle_bytes(sc03, pattern);
    sc[j + 4] = shuffle_bytes(sc47, pattern);
  }
  const VI pair0 = bytes_pattern(kPairOfDword[0]), pair1 = bytes_pattern(kPairOfDword[1]);
  mins[0] = shuffle_bytes(m03, pair0);
  mins[1] = shuffle_bytes(m03, pair1);
  mins[2] = shuffle_bytes(m47, pair0);
  mins[3] = shuffle_bytes(m47, pair1);
}

// The tile is one long function on purpose: its accumulators must stay in registers
// across the chunk loop, which splitting it into calls would not guarantee.
struct Q4_KKind : KQuantKind {

  template <int P, int T>
  static void tile(const MatmulCall& c, const TileArgs& args, int64_t sb0, int64_t sb1) {
    const PackedWeights& w = *c.w;
    const auto& a = *static_cast<const QuantizedActivations*>(c.x);
    TokenQ x[T];
    tile_tokens(a, args, 256, x);
    const int64_t n = a.n;
    const VI nibble = set1_i32(0x0F0F0F0F), high = set1_i32(static_cast<int32_t>(0xF0F0F0F0u));
    VF acc[P][T];
    load_acc(args, acc);
    // Super-block by super-block (a stripe), and within it panel by panel, so that a
    // GEMV reads its group's stripes in ascending order.
    for (int64_t sb = sb0; sb < sb1; ++sb) {
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const uint8_t* base = w.panel(args.p0 + p) + sb * w.stride(args.p0 + p);
        VI sc[8], mins[4];
        VI isum[T], msum[T];
        unpack_q4k_scales(base + 64, sc, mins);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          isum[t] = zero_i();
          msum[t] = zero_i();
          for (int i = 0; i < 4; ++i) msum[t] = dot_i16(msum[t], mins[i], set1_i32(x[t].pairs[sb * n * 4 + i]));
        }
        for (int ch = 0; ch < 4; ++ch) {
          VI lo_sum[T], hi_sum[T];
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) lo_sum[t] = hi_sum[t] = zero_i();
#pragma GCC unroll 8
          for (int u = 0; u < 8; ++u) {
            const VI packed = load_i(base + 256 + (8 * ch + u) * 64);
            // Where the dot product takes any unsigned byte, the high nibble stays in
            // place (16 q) and its sum is divided by 16 once per chunk.
            const VI lo = and_i(packed, nibble);
            const VI hi = kHighNibbleInPlace ? and_i(packed, high) : and_i(srli_i32<4>(packed), nibble);
#pragma GCC unroll 16
            for (int t = 0; t < T; ++t) {
              const int8_t* xq = x[t].q + sb * n * 256 + 64 * ch + 4 * u;
              lo_sum[t] = dot_u8s8_bcast(lo_sum[t], lo, xq);
              hi_sum[t] = dot_u8s8_bcast(hi_sum[t], hi, xq + 32);
            }
          }
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) {
            const VI hi_sum_q = kHighNibbleInPlace ? srai_i32<4>(hi_sum[t]) : hi_sum[t];
            isum[t] = add_i32(isum[t], add_i32(mullo_i32(lo_sum[t], sc[2 * ch]), mullo_i32(hi_sum_q, sc[2 * ch + 1])));
          }
        }
        const VF d = load_f16(reinterpret_cast<const uint16_t*>(base));
        const VF dmin = load_f16(reinterpret_cast<const uint16_t*>(base + 32));
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          const VF dx = set1_f(x[t].d[sb * n]);
          acc[p][t] = fma_f(cvt_i2f(isum[t]), mul_f(d, dx), acc[p][t]);
          acc[p][t] = fnma_f(cvt_i2f(msum[t]), mul_f(dmin, dx), acc[p][t]);
        }
      }
    }
    store_acc(args, acc);
  }
};

void matmul_q4_k(const MatmulCall& c) { run_tiles<Q4_KKind>(c); }
