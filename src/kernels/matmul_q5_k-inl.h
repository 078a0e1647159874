// Q5_K weights against K activations (blocks of 256): Q4_K's arithmetic with 5-bit
// levels. Per lane (row r, token t) and super-block, in order:
//   isum = sum_j sc_j * sum_{i in j} q_w[i] * q_x[i]   (8 sub-blocks of 32, exact)
//   msum = sum_j m_j * sum_{i in j} q_x[i]             (exact)
//   acc  = fma(float(isum), d * d_x, acc)
//   acc  = acc - float(msum) * (dmin * d_x)            (one rounding: fnma)
// A level is its low nibble (Q4_K's units) with the fifth bit moved into place from
// the super-block's high-bit vectors.
// Spliced into a target namespace after matmul_q4_k-inl.h.

// Bit S of each byte of v at bit 4 (other bits are the caller's to mask).
template <int S>
LLMS_SIMD VI bit_to_4(VI v) {
  if constexpr (S < 4) {
    return slli_i32<4 - S>(v);
  } else if constexpr (S > 4) {
    return srli_i32<S - 4>(v);
  } else {
    return v;
  }
}

// The tile is one long function on purpose, as Q4_K's: its accumulators stay in
// registers across the chunk loop.
struct Q5_KKind : KQuantKind {
  // Chunk CH (sub-blocks 2CH, 2CH + 1) of the super-block at `base` for T tokens:
  // per unit u the low nibbles are step u of sub-block 2CH, whose fifth bits are bit
  // 2CH of high-bit vector u, the high nibbles step u of sub-block 2CH + 1 (bit 2CH + 1).
  template <int CH, int T>
  LLMS_SIMD static void chunk(const uint8_t* base, const TokenQ (&x)[T], int64_t sb, int64_t n, const VI (&sc)[8],
                              VI (&isum)[T]) {
    const VI nibble = set1_i32(0x0F0F0F0F), bit4 = set1_i32(0x10101010);
    VI lo_sum[T], hi_sum[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) lo_sum[t] = hi_sum[t] = zero_i();
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) {
      const VI packed = load_i(base + 768 + (8 * CH + u) * 64);
      const VI bits = load_i(base + 256 + 64 * u);
      const VI lo = and_or(packed, nibble, and_i(bit_to_4<2 * CH>(bits), bit4));
      const VI hi = and_or(srli_i32<4>(packed), nibble, and_i(bit_to_4<2 * CH + 1>(bits), bit4));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const int8_t* xq = x[t].q + sb * n * 256 + 64 * CH + 4 * u;
        lo_sum[t] = dot_u8s8_bcast(lo_sum[t], lo, xq);
        hi_sum[t] = dot_u8s8_bcast(hi_sum[t], hi, xq + 32);
      }
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      isum[t] = add_i32(isum[t], add_i32(mullo_i32(lo_sum[t], sc[2 * CH]), mullo_i32(hi_sum[t], sc[2 * CH + 1])));
    }
  }

  template <int P, int T>
  static void tile(const MatmulCall& c, const TileArgs& args, int64_t sb0, int64_t sb1) {
    const PackedWeights& w = *c.w;
    const auto& a = *static_cast<const QuantizedActivations*>(c.x);
    TokenQ x[T];
    tile_tokens(a, args, 256, x);
    const int64_t n = a.n;
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
        chunk<0>(base, x, sb, n, sc, isum);
        chunk<1>(base, x, sb, n, sc, isum);
        chunk<2>(base, x, sb, n, sc, isum);
        chunk<3>(base, x, sb, n, sc, isum);
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

void matmul_q5_k(const MatmulCall& c) { run_tiles<Q5_KKind>(c); }
