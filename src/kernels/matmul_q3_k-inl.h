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
  // Sub-blocks 2k and 2k + 1 (`pair`, three vectors V0, V1, V2) into isum. Their 8
  // steps e0..e3, o0..o3 sit as 3-bit fields: V0 = e0 | e1 << 3 | low(e2) << 6,
  // V1 = e3 | o0 << 3 | low(o1) << 6, V2 = o2 | o3 << 3 | high(e2) << 6 | high(o1) << 7
  // (low: the 2 low bits, high: the third), so that most steps take one or two
  // operations to unpack.
  template <int T>
  LLMS_SIMD static void sub_block_pair(const uint8_t* pair, const TokenQ (&x)[T], int64_t sb, int64_t n, int k,
                                       const VI (&sc)[16], VI (&isum)[T]) {
    const VI low3 = set1_i32(0x07070707), low2 = set1_i32(0x03030303), bit2 = set1_i32(0x04040404);
    const VI v0 = load_i(pair), v1 = load_i(pair + 64), v2 = load_i(pair + 128);
    const VI q[8] = {and_i(v0, low3),
                     and_i(srli_i32<3>(v0), low3),
                     and_or(srli_i32<6>(v0), low2, and_i(srli_i32<4>(v2), bit2)),
                     and_i(v1, low3),
                     and_i(srli_i32<3>(v1), low3),
                     and_or(srli_i32<6>(v1), low2, and_i(srli_i32<5>(v2), bit2)),
                     and_i(v2, low3),
                     and_i(srli_i32<3>(v2), low3)};
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const int j = 2 * k + h;
      VI v[T];
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const int8_t* xq = x[t].q + sb * n * 256 + 16 * j;
        v[t] = set1_i32(x[t].corr[sb * n * 16 + j] / 8);
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) v[t] = dot_u8s8_bcast(v[t], q[4 * h + s], xq + 4 * s);
      }
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) isum[t] = add_i32(isum[t], mullo_i32(v[t], sc[j]));
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
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) sub_block_pair(base + 192 + 192 * k, x, sb, n, k, sc, isum);
          } else {
            for (int k = 0; k < 8; ++k) sub_block_pair(base + 192 + 192 * k, x, sb, n, k, sc, isum);
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
