// Q5_K weights against K activations (blocks of 256): Q4_K's arithmetic with 5-bit
// levels. Per lane (row r, token t) and super-block, in order:
//   isum = sum_j sc_j * sum_{i in j} q_w[i] * q_x[i]   (8 sub-blocks of 32, exact)
//   msum = sum_j m_j * sum_{i in j} q_x[i]             (exact)
//   acc  = fma(float(isum), d * d_x, acc)
//   acc  = acc - float(msum) * (dmin * d_x)            (one rounding: fnma)
// A level is its low nibble (Q4_K's units) with the fifth bit moved into place from
// the chunk's two high-bit vectors.
// Spliced into a target namespace after matmul_q4_k-inl.h.

// The tile is one long function on purpose, as Q4_K's: its accumulators stay in
// registers across the chunk loop.
struct Q5_KKind : KQuantKind {
  // Chunk ch (sub-blocks 2ch, 2ch + 1) of the super-block at `base` for T tokens:
  // two vectors of fifth bits, then 8 units. Unit u's low nibbles are step u of
  // sub-block 2ch, whose fifth bits are bit 2(u % 4) of bits vector u / 4, its high
  // nibbles step u of sub-block 2ch + 1 (bit 2(u % 4) + 1). One ascending stream.
  template <int T>
  LLMS_SIMD static void chunk(const uint8_t* base, const TokenQ (&x)[T], int64_t sb, int64_t n, int ch,
                              const VI (&sc)[8], VI (&isum)[T]) {
    const VI nibble = set1_i32(0x0F0F0F0F), bit4 = set1_i32(0x10101010);
    const uint8_t* c = base + 256 + 640 * ch;
    VI lo_sum[T], hi_sum[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) lo_sum[t] = hi_sum[t] = zero_i();
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      const VI bits = load_i(c + 64 * v);
      // Bits 2k and 2k + 1 to bit 4 of each byte: shifted left for k < 2, right from
      // k = 2 on (a left shift would push the top byte's bits out of its lane).
      VI lo_bits = slli_i32<4>(bits), hi_bits = slli_i32<3>(bits);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const int u = 4 * v + k;
        if (k == 2) lo_bits = bits, hi_bits = srli_i32<1>(bits);
        const VI packed = load_i(c + 128 + 64 * u);
        const VI lo = and_or(packed, nibble, and_i(lo_bits, bit4));
        const VI hi = and_or(srli_i32<4>(packed), nibble, and_i(hi_bits, bit4));
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          const int8_t* xq = x[t].q + sb * n * 256 + 64 * ch + 4 * u;
          lo_sum[t] = dot_u8s8_bcast(lo_sum[t], lo, xq);
          hi_sum[t] = dot_u8s8_bcast(hi_sum[t], hi, xq + 32);
        }
        lo_bits = srli_i32<2>(lo_bits);
        hi_bits = srli_i32<2>(hi_bits);
      }
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      isum[t] = add_i32(isum[t], add_i32(mullo_i32(lo_sum[t], sc[2 * ch]), mullo_i32(hi_sum[t], sc[2 * ch + 1])));
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
        for (int ch = 0; ch < 4; ++ch) chunk(base, x, sb, n, ch, sc, isum);
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
