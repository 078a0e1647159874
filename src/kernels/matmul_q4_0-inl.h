// Q4_0 weights against Q8 activations (blocks of 32). Per lane (row r, token t) and
// block b, in order:
//   isum = sum_i (q_w[i] - 8) * q_x[i]                (exact int32)
//   acc  = fma(float(isum), d_w * d_x, acc)
// The dot takes the unsigned nibbles; isum starts at corr = -8 * sum(q_x).
// Spliced into a target namespace after matmul_tiles-inl.h.

struct Q4_0Kind {
  static constexpr int kGemv = kGemvPanels;
  static constexpr int kPanels = kQ8GemmPanels;
  static constexpr int kTokens = kQ8GemmTokens;
  static constexpr int64_t kChunk = 2 * kQ8GemmChunk;  // half the bytes of a Q8_0 block
  static int64_t units(const PackedWeights& w) { return w.cols / 32; }

  template <int P, int T>
  static void tile(const MatmulCall& c, const TileArgs& args, int64_t b0, int64_t b1) {
    const PackedWeights& w = *c.w;
    const auto& a = *static_cast<const QuantizedActivations*>(c.x);
    const uint8_t* panel[P];
    for (int p = 0; p < P; ++p) panel[p] = w.panel(args.p0 + p);
    TokenQ x[T];
    for (int t = 0; t < T; ++t) x[t] = token_q(a, token_of(args, t), 32);
    const int64_t n = a.n;
    const VI nibble = set1_i32(0x0F0F0F0F), high = set1_i32(static_cast<int32_t>(0xF0F0F0F0u));
    VF acc[P][T];
    load_acc(args, acc);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t q_off = paired_q_offset(b, 256), d_off = paired_d_offset(b, 256);
      if constexpr (T == 1) {
        // Decode does little arithmetic per byte here: software prefetch keeps more of
        // each panel's stream in flight than the hardware prefetcher alone.
        if (b % 2 == 0) {
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p)
            for (int i = 0; i < 576; i += 64) __builtin_prefetch(panel[p] + d_off + kGemvPrefetchBytes + i, 0, kPrefetchLocality);
        }
      }
      // Where the dot product takes any unsigned byte, the high nibbles stay in place
      // (16 q) in a sum of their own, divided by 16 once per block: one shift less
      // per 64 bytes.
      VI isum[P][T], hsum[P][T];
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) isum[p][t] = set1_i32(x[t].corr[b * n]), hsum[p][t] = zero_i();
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          const VI packed = load_i(panel[p] + q_off + u * 64);
          const VI lo = and_i(packed, nibble);
          const VI hi = kHighNibbleInPlace ? and_i(packed, high) : and_i(srli_i32<4>(packed), nibble);
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) {
            isum[p][t] = dot_u8s8(isum[p][t], lo, bcast_i32(x[t].q + b * n * 32 + 4 * u));
            VI& h = kHighNibbleInPlace ? hsum[p][t] : isum[p][t];
            h = dot_u8s8(h, hi, bcast_i32(x[t].q + b * n * 32 + 16 + 4 * u));
          }
        }
      }
      if constexpr (kHighNibbleInPlace) {
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) isum[p][t] = add_i32(isum[p][t], srai_i32<4>(hsum[p][t]));
      }
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const VF d = load_f16(reinterpret_cast<const uint16_t*>(panel[p] + d_off));
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) acc[p][t] = fma_f(cvt_i2f(isum[p][t]), mul_f(d, set1_f(x[t].d[b * n])), acc[p][t]);
      }
    }
    store_acc(args, acc);
  }
};

void matmul_q4_0(const MatmulCall& c) { run_tiles<Q4_0Kind>(c); }
