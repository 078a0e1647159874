// IQ4_NL and IQ4_XS weights: 4-bit codes looked up in a 16-entry table of int8 levels
// (one pshufb per 64 codes), then multiplied as Q8_0 weights are: the table holds
// level + 128, as Q8_0's packed values do, so dot_q8() and KernelTable::q8_0_bias
// apply unchanged. Per lane (row r, token t), in order:
//   IQ4_NL, per block b of 32 (Q8 activations, corr = -bias * sum(q_x)):
//     isum = sum_i level[i] * q_x[i]                              (exact, from corr)
//     acc  = fma(float(isum), d_w * d_x, acc)
//   IQ4_XS, per super-block of 256 (K activations; sub-blocks j of 32, 6-bit scales):
//     isum = sum_j (ls_j - 32) * sum_{i in j} level[i] * q_x[i]   (exact)
//     acc  = fma(float(isum), d_w * d_x, acc)
// Spliced into a target namespace after matmul_tiles-inl.h.

alignas(16) inline constexpr int8_t kIq4Biased[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                      -127, -115, -103, -90, -75, -59, -39, -15};

// Unit u (64 bytes: 128 codes) of a Q4_0-layout block for T tokens whose 32
// activations start at xq[t]: the low nibbles are step u, the high ones step u + 4.
template <int T>
LLMS_SIMD void add_iq4_unit(const uint8_t* unit, VI lut, VI nibble, const int8_t* const (&xq)[T], int u, VI (&isum)[T]) {
  const VI packed = load_i(unit);
  const VI lo = shuffle_bytes(lut, and_i(packed, nibble));
  const VI hi = shuffle_bytes(lut, and_i(srli_i32<4>(packed), nibble));
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    isum[t] = dot_q8_bcast(isum[t], lo, xq[t] + 4 * u);
    isum[t] = dot_q8_bcast(isum[t], hi, xq[t] + 16 + 4 * u);
  }
}

struct IQ4_NLKind {
  static constexpr int kGemv = kGemvPanels;
  static constexpr int kPanels = kQ8GemmPanels;
  static constexpr int kTokens = kQ8GemmTokens;
  static constexpr int64_t kChunk = 2 * kQ8GemmChunk;
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
    const VI nibble = set1_i32(0x0F0F0F0F), lut = bytes_pattern(kIq4Biased);
    VF acc[P][T];
    load_acc(args, acc);
    auto block = [&](int p, int64_t b) __attribute__((always_inline)) {
      VI isum[T];
      const int8_t* xq[T];
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) isum[t] = set1_i32(x[t].corr[b * n]), xq[t] = x[t].q + b * n * 32;
      const uint8_t* q = panel[p] + paired_q_offset(b, 256, stride[p]);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) add_iq4_unit(q + 64 * u, lut, nibble, xq, u, isum);
      const VF d = load_f16(reinterpret_cast<const uint16_t*>(panel[p] + paired_d_offset(b, stride[p])));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[p][t] = fma_f(cvt_i2f(isum[t]), mul_f(d, set1_f(x[t].d[b * n])), acc[p][t]);
    };
    // Pair by pair (a stripe), and within it panel by panel: a GEMV reads its group's
    // stripes in ascending order.
    for (int64_t b_pair = b0; b_pair < b1; b_pair = pair_end(b_pair, b1)) {
      const int64_t b_end = pair_end(b_pair, b1);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p)
        for (int64_t b = b_pair; b < b_end; ++b) block(p, b);
    }
    store_acc(args, acc);
  }
};

// The 6-bit scales of 16 rows for sub-blocks j = 0..7, each minus 32, one int32 per
// lane: `low` holds nibble j = the low 4 bits of ls_j, `high` bits 2j, 2j + 1 = its top
// two bits (see packed_weights.h).
LLMS_SIMD void unpack_iq4xs_scales(VI low, VI high, VI (&sc)[8]) {
  const VI low4 = set1_i32(0x0F), bits45 = set1_i32(0x30), minus32 = set1_i32(-32);
  VI h = slli_i32<4>(high);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    sc[j] = add_i32(and_or(low, low4, and_i(h, bits45)), minus32);
    low = srli_i32<4>(low);
    h = srli_i32<2>(h);
  }
}

struct IQ4_XSKind : KQuantKind {
  template <int P, int T>
  static void tile(const MatmulCall& c, const TileArgs& args, int64_t sb0, int64_t sb1) {
    const PackedWeights& w = *c.w;
    const auto& a = *static_cast<const QuantizedActivations*>(c.x);
    TokenQ x[T];
    tile_tokens(a, args, 256, x);
    const int64_t n = a.n;
    const VI nibble = set1_i32(0x0F0F0F0F), lut = bytes_pattern(kIq4Biased);
    VF acc[P][T];
    load_acc(args, acc);
    // Super-block by super-block (a stripe), and within it panel by panel.
    for (int64_t sb = sb0; sb < sb1; ++sb) {
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const uint8_t* base = w.panel(args.p0 + p) + sb * w.stride(args.p0 + p);
        VI sc[8];
        unpack_iq4xs_scales(load_i(base + 64), load_u16_to_i32(reinterpret_cast<const uint16_t*>(base + 32)), sc);
        VI isum[T];
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) isum[t] = zero_i();
        for (int j = 0; j < 8; ++j) {
          VI dot[T];
          const int8_t* xq[T];
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) {
            // -bias * sum(q_x) over the sub-block, from the K format's sums of 16.
            const int32_t* corr = x[t].corr + sb * n * 16 + 2 * j;
            dot[t] = set1_i32(kQ8_0Bias / 32 * (corr[0] + corr[1]));
            xq[t] = x[t].q + sb * n * 256 + 32 * j;
          }
#pragma GCC unroll 4
          for (int u = 0; u < 4; ++u) add_iq4_unit(base + 128 + 256 * j + 64 * u, lut, nibble, xq, u, dot);
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) isum[t] = add_i32(isum[t], mullo_i32(dot[t], sc[j]));
        }
        const VF d = load_f16(reinterpret_cast<const uint16_t*>(base));
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) acc[p][t] = fma_f(cvt_i2f(isum[t]), mul_f(d, set1_f(x[t].d[sb * n])), acc[p][t]);
      }
    }
    store_acc(args, acc);
  }
};

void matmul_iq4_nl(const MatmulCall& c) { run_tiles<IQ4_NLKind>(c); }
void matmul_iq4_xs(const MatmulCall& c) { run_tiles<IQ4_XSKind>(c); }
