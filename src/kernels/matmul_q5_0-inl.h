// Q5_0 and Q5_1 weights against Q8 activations in blocks of 32 (the Q4_0 format:
// corr = -8 * sum(q_x)). Per lane (row r, token t) and block b, in order:
//   Q5_0: isum = sum_i (q_w[i] - 16) * q_x[i]          (exact int32, from 2 * corr)
//         acc  = fma(float(isum), d_w * d_x, acc)
//   Q5_1: isum = sum_i q_w[i] * q_x[i]                 (exact int32, from 0)
//         acc  = fma(float(isum), d_w * d_x, acc)
//         acc  = fma(s_x, m_w, acc)                  (s_x = d_x * sum_i q_x[i] in F16)
// The dot takes the unsigned 5-bit levels: the low nibble (Q4_0's units) with the
// fifth bit moved into place from the block's 64 bytes of high bits.
// Spliced into a target namespace after matmul_tiles-inl.h.

template <bool kMin>
struct Q5Kind {
  static constexpr int kGemv = kGemvPanels;
  static constexpr int kPanels = kQ8GemmPanels;
  static constexpr int kTokens = kQ8GemmTokens;
  static constexpr int64_t kChunk = 2 * kQ8GemmChunk;
  static int64_t units(const PackedWeights& w) { return w.cols / 32; }

  // Where block b's scale d (and min m) and its high bits (followed by its low
  // nibbles) start, from stripe 0 of its panel (see packed_weights.h).
  static constexpr int64_t kHead = kMin ? 128 : 64;
  static int64_t d_at(int64_t b, int64_t stride) { return b / 2 * stride + 32 * (b % 2); }
  static int64_t m_at(int64_t b, int64_t stride) { return b / 2 * stride + 64 + 32 * (b % 2); }
  static int64_t q_at(int64_t b, int64_t stride) { return b / 2 * stride + kHead + 320 * (b % 2); }

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
    const VI nibble = set1_i32(0x0F0F0F0F), bit4 = set1_i32(0x10101010);
    VF acc[P][T];
    load_acc(args, acc);
    auto start = [&](int64_t b, VI (&isum)[T]) __attribute__((always_inline)) {
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) isum[t] = kMin ? zero_i() : set1_i32(2 * x[t].corr[b * n]);
    };
    // Unit u (64 bytes of low nibbles) of panel p's block b for all T tokens; `lo_bits`
    // and `hi_bits` hold the high bits shifted so that unit u's are at bit 4.
    auto add_unit = [&](int p, int64_t b, int u, VI lo_bits, VI hi_bits, VI (&isum)[T]) __attribute__((always_inline)) {
      const VI packed = load_i(panel[p] + q_at(b, stride[p]) + 64 + u * 64);
      const VI lo = and_or(packed, nibble, and_i(lo_bits, bit4));
      const VI hi = and_or(srli_i32<4>(packed), nibble, and_i(hi_bits, bit4));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        isum[t] = dot_u8s8_bcast(isum[t], lo, x[t].q + b * n * 32 + 4 * u);
        isum[t] = dot_u8s8_bcast(isum[t], hi, x[t].q + b * n * 32 + 16 + 4 * u);
      }
    };
    // All four units of the block: bit u of each byte of the high bits belongs to unit
    // u's low nibbles, bit 4 + u to its high nibbles.
    auto add_block = [&](int p, int64_t b, VI (&isum)[T]) __attribute__((always_inline)) {
      const VI bits = load_i(panel[p] + q_at(b, stride[p]));
      VI lo_bits = slli_i32<4>(bits), hi_bits = bits;
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        add_unit(p, b, u, lo_bits, hi_bits, isum);
        lo_bits = srli_i32<1>(lo_bits);
        hi_bits = srli_i32<1>(hi_bits);
      }
    };
    auto finish = [&](int p, int64_t b, const VI (&isum)[T]) __attribute__((always_inline)) {
      const VF d = load_f16(reinterpret_cast<const uint16_t*>(panel[p] + d_at(b, stride[p])));
      VF m = zero_f();
      if constexpr (kMin) m = load_f16(reinterpret_cast<const uint16_t*>(panel[p] + m_at(b, stride[p])));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const VF dx = set1_f(x[t].d[b * n]);
        acc[p][t] = fma_f(cvt_i2f(isum[t]), mul_f(d, dx), acc[p][t]);
        if constexpr (kMin) {
          acc[p][t] = fma_f(set1_f(x[t].s[b * n]), m, acc[p][t]);
        }
      }
    };
    if constexpr (T == 1) {
      // Decode: pair by pair (a stripe), and within it panel by panel, so that the
      // group's stripes are read in ascending order.
      for (int64_t b_pair = b0; b_pair < b1; b_pair = pair_end(b_pair, b1)) {
        const int64_t b_end = pair_end(b_pair, b1);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          for (int64_t b = b_pair; b < b_end; ++b) {
            VI isum[T];
            start(b, isum);
            add_block(p, b, isum);
            finish(p, b, isum);
          }
        }
      }
    } else {
      // Prefill: block by block across the panels.
      for (int64_t b = b0; b < b1; ++b) {
        VI isum[P][T];
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) start(b, isum[p]);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) add_block(p, b, isum[p]);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) finish(p, b, isum[p]);
      }
    }
    store_acc(args, acc);
  }
};

void matmul_q5_0(const MatmulCall& c) { run_tiles<Q5Kind<false>>(c); }
void matmul_q5_1(const MatmulCall& c) { run_tiles<Q5Kind<true>>(c); }
