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
    int64_t stride[P];
    tile_panels(w, args, panel, stride);
    TokenQ x[T];
    tile_tokens(a, args, 32, x);
    const int64_t n = a.n;
    const VI nibble = set1_i32(0x0F0F0F0F), high = set1_i32(static_cast<int32_t>(0xF0F0F0F0u));
    VF acc[P][T];
    load_acc(args, acc);
    // Where the dot product takes any unsigned byte, the high nibbles stay in place
    // (16 q) in a sum of their own (hsum), divided by 16 once per block: one shift less
    // per 64 bytes. start() and finish() open and close a block's exact integer sums,
    // add_unit() adds unit u (64 bytes) of panel p's block b for all T tokens.
    auto start = [&](int64_t b, VI (&isum)[T], VI (&hsum)[T]) {
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) isum[t] = set1_i32(x[t].corr[b * n]), hsum[t] = zero_i();
    };
    auto add_unit = [&](int p, int64_t b, int u, VI (&isum)[T], VI (&hsum)[T]) {
      const VI packed = load_i(panel[p] + paired_q_offset(b, 256, stride[p]) + u * 64);
      const VI lo = and_i(packed, nibble);
      const VI hi = kHighNibbleInPlace ? and_i(packed, high) : and_i(srli_i32<4>(packed), nibble);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        isum[t] = dot_u8s8_bcast(isum[t], lo, x[t].q + b * n * 32 + 4 * u);
        VI& h = kHighNibbleInPlace ? hsum[t] : isum[t];
        h = dot_u8s8_bcast(h, hi, x[t].q + b * n * 32 + 16 + 4 * u);
      }
    };
    auto finish = [&](int p, int64_t b, VI (&isum)[T], const VI (&hsum)[T]) {
      if constexpr (kHighNibbleInPlace) {
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) isum[t] = add_i32(isum[t], srai_i32<4>(hsum[t]));
      }
      const VF d = load_f16(reinterpret_cast<const uint16_t*>(panel[p] + paired_d_offset(b, stride[p])));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[p][t] = fma_f(cvt_i2f(isum[t]), mul_f(d, set1_f(x[t].d[b * n])), acc[p][t]);
    };
    if constexpr (T == 1) {
      // Decode (and a GEMM's single last token): pair by pair (a stripe), and within
      // it panel by panel, so that the group's stripes are read in ascending order.
      // Per lane the blocks still come in order.
      for (int64_t b_pair = b0; b_pair < b1; b_pair = pair_end(b_pair, b1)) {
        const int64_t b_end = pair_end(b_pair, b1);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          for (int64_t b = b_pair; b < b_end; ++b) {
            VI isum[T], hsum[T];
            start(b, isum, hsum);
#pragma GCC unroll 4
            for (int u = 0; u < 4; ++u) add_unit(p, b, u, isum, hsum);
            finish(p, b, isum, hsum);
          }
        }
      }
    } else {
      // Prefill: block by block, each unit of the block for all panels, so that a
      // token's activations are loaded once for all panels (2-3 points of peak more
      // than the decode order here).
      for (int64_t b = b0; b < b1; ++b) {
        VI isum[P][T], hsum[P][T];
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) start(b, isum[p], hsum[p]);
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u)
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p) add_unit(p, b, u, isum[p], hsum[p]);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) finish(p, b, isum[p], hsum[p]);
      }
    }
    store_acc(args, acc);
  }
};

void matmul_q4_0(const MatmulCall& c) { run_tiles<Q4_0Kind>(c); }
