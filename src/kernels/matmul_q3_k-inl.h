// Q3_K weights against K activations (blocks of 256). Per lane (row r, token t) and
// super-block, in order:
//   isum = sum_j (s_j - 32) * sum_{i in j} (q_w[i] - 4) * q_x[i]   (16 sub-blocks of 16)
//   acc  = fma(float(isum), d * d_x, acc)
// The dot takes the unsigned 3-bit levels (low 2 bits and the high bit joined); each
// sub-block's sum starts at -4 * sum(q_x) = corr / 8 (corr = -32 * sum(q_x)).
// Spliced into a target namespace after matmul_q4_k-inl.h (kByteOfDword).

// The 16 six-bit scales of 16 rows from their 12 packed bytes (three vectors, bytes
// 0-3, 4-7, 8-11 of row r at 4r; layout in BlockQ3_K), each minus 32, one int32 per
// lane: sc[j] for sub-block j.
LLMS_SIMD void unpack_q3k_scales(const uint8_t* s, VI (&sc)[16]) {
  const VI z0 = load_i(s), z1 = load_i(s + 64), z2 = load_i(s + 128);
  const VI low4 = set1_i32(0x0F0F0F0F), bits45 = set1_i32(0x30303030), minus32 = set1_i32(-32);
  // Byte k of each lane of group g holds scale 4g + k.
  const VI group[4] = {and_or(z0, low4, and_i(slli_i32<4>(z2), bits45)),
                       and_or(z1, low4, and_i(slli_i32<2>(z2), bits45)),
                       and_or(srli_i32<4>(z0), low4, and_i(z2, bits45)),
                       and_or(srli_i32<4>(z1), low4, and_i(srli_i32<2>(z2), bits45))};
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) sc[j] = add_i32(shuffle_bytes(group[j / 4], bytes_pattern(kByteOfDword[j % 4])), minus32);
}

struct Q3_KKind : KQuantKind {
  // Sub-block j of the super-block whose levels start at `body` into isum: the low
  // bits of step s are bits 2s, 2s + 1 of vector A_j, the high bit is bit s (j even)
  // or 4 + s (j odd) of the pair's vector H.
  template <int T>
  LLMS_SIMD static void sub_block(const uint8_t* body, const TokenQ (&x)[T], int64_t sb, int64_t n, int j, VI sc,
                                  VI (&isum)[T]) {
    const VI low2 = set1_i32(0x03030303), bit2 = set1_i32(0x04040404);
    const uint8_t* pair = body + 192 * (j / 2);
    VI lo = load_i(pair + 64 * (j % 2));
    const VI h = load_i(pair + 128);
    VI hi = j % 2 == 0 ? slli_i32<2>(h) : srli_i32<2>(h);  // bit s of this sub-block at 2 + s
    VI v[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) v[t] = set1_i32(x[t].corr[sb * n * 16 + j] / 8);
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) {
      const VI q = and_or(lo, low2, and_i(hi, bit2));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) v[t] = dot_u8s8_bcast(v[t], q, x[t].q + sb * n * 256 + 16 * j + 4 * s);
      lo = srli_i32<2>(lo);
      hi = srli_i32<1>(hi);
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) isum[t] = add_i32(isum[t], mullo_i32(v[t], sc));
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
    // Super-block pair by pair (a stripe), and within it panel by panel, so that a
    // GEMV reads its group's stripes in ascending order.
    for (int64_t b0 = sb0; b0 < sb1;) {
      const int64_t b1 = pair_end(b0, sb1);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const uint8_t* panel = w.panel(args.p0 + p);
        const int64_t stride = w.stride(args.p0 + p);
        for (int64_t sb = b0; sb < b1; ++sb) {
          const uint8_t* base = panel + paired_q_offset(sb, 1728, stride);
          VI sc[16], isum[T];
          unpack_q3k_scales(base, sc);
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) isum[t] = zero_i();
          if constexpr (T == 1) {
#pragma GCC unroll 16
            for (int j = 0; j < 16; ++j) sub_block(base + 192, x, sb, n, j, sc[j], isum);
          } else {
            for (int j = 0; j < 16; ++j) sub_block(base + 192, x, sb, n, j, sc[j], isum);
          }
          const VF d = load_f16(reinterpret_cast<const uint16_t*>(panel + paired_d_offset(sb, stride)));
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) acc[p][t] = fma_f(cvt_i2f(isum[t]), mul_f(d, set1_f(x[t].d[sb * n])), acc[p][t]);
        }
      }
      b0 = b1;
    }
    store_acc(args, acc);
  }
};

void matmul_q3_k(const MatmulCall& c) { run_tiles<Q3_KKind>(c); }
