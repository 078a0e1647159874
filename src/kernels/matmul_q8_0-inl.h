// Q8_0 weights against Q8 activations (blocks of 32). Per lane (row r, token t) and
// block b, in order:
//   isum = sum_i q_w[i] * q_x[i]                      (exact int32)
//   acc  = fma(float(isum), d_w * d_x, acc)
// The packed weights hold q + 128; targets whose dot takes unsigned bytes start isum
// at corr = -128 * sum(q_x) (KernelTable::q8_0_bias), the others at 0.
// Spliced into a target namespace after matmul_tiles-inl.h.

// One block of a GEMM tile (T > 1): the block's eight steps of dots for all P panels
// and T tokens, then its scale step into acc. q[p] and d[p] are panel p's values and
// F16 scales of the block; token t's values, scale and correction are at xq + 32 t,
// xd[t] and xc[t]. Each token's activations are loaded once per step for all panels
// (6 points of peak more than the decode order).
template <int P, int T>
LLMS_SIMD void q8_0_gemm_block(const uint8_t* const (&q)[P], const uint8_t* const (&d)[P], const int8_t* xq,
                               const float* xd, const int32_t* xc, VF (&acc)[P][T]) {
  VI isum[P][T];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) isum[p][t] = set1_i32(xc[t]);
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    VI wv[P];
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) wv[p] = load_i(q[p] + s * 64);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      const VI xv = bcast_i32(xq + 32 * t + 4 * s);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) isum[p][t] = dot_q8(isum[p][t], wv[p], xv);
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
    const VF dw = load_f16(reinterpret_cast<const uint16_t*>(d[p]));
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[p][t] = fma_f(cvt_i2f(isum[p][t]), mul_f(dw, set1_f(xd[t])), acc[p][t]);
  }
}

struct Q8_0Kind {
  static constexpr int kGemv = kGemvPanels;
  static constexpr int kPanels = kQ8GemmPanels;
  static constexpr int kTokens = kQ8GemmTokens;
  static constexpr int64_t kChunk = kQ8GemmChunk;
  static int64_t units(const PackedWeights& w) { return w.cols / 32; }

  template <int P, int T>
  static void tile(const MatmulCall& c, const TileArgs& args, int64_t b0, int64_t b1) {
    const PackedWeights& w = *c.w;
    const auto& a = *static_cast<const QuantizedActivations*>(c.x);
    const uint8_t* panel[P];
    int64_t stride[P];
    tile_panels(w, args, panel, stride);
    const int64_t n = a.n;
    VF acc[P][T];
    load_acc(args, acc);
    ChunkPrefetch<P> pf(c, args, b1 - b0);  // none for GEMV tiles
    if constexpr (T == 1) {
      // Decode (and a GEMM's single last token): pair by pair (a stripe), and within
      // it panel by panel, so that the group's stripes are read in ascending order.
      // Per lane the blocks still come in order.
      TokenQ x[1];
      tile_tokens(a, args, 32, x);
      for (int64_t b_pair = b0; b_pair < b1; b_pair = pair_end(b_pair, b1)) {
        const int64_t b_end = pair_end(b_pair, b1);
        for (int64_t b = b_pair; b < b_end; ++b) pf.step_once();  // a GEMM's last token
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          for (int64_t b = b_pair; b < b_end; ++b) {
            // Two exact integer partial sums (even and odd steps): a shorter chain.
            VI even = set1_i32(x[0].corr[b * n]), odd = zero_i();
            const uint8_t* q = panel[p] + paired_q_offset(b, 512, stride[p]);
#pragma GCC unroll 8
            for (int s = 0; s < 8; ++s) {
              VI& sum = s % 2 == 0 ? even : odd;
              // The weights as the memory operand and the broadcast shared by the
              // panels: with the broadcast as the operand instead (as in the GEMM
              // below), this GEMV read at 80-92% of the bandwidth, not 91-99%.
              sum = dot_q8(sum, load_i(q + s * 64), bcast_i32(x[0].q + b * n * 32 + 4 * s));
            }
            const VF d = load_f16(reinterpret_cast<const uint16_t*>(panel[p] + paired_d_offset(b, stride[p])));
            acc[p][0] = fma_f(cvt_i2f(add_i32(even, odd)), mul_f(d, set1_f(x[0].d[b * n])), acc[p][0]);
          }
        }
      }
    } else {
      // Prefill: block by block (q8_0_gemm_block). Slot t reads token t0 + t, even
      // past `valid` (its results are dropped; QuantizedActivations holds
      // kTileSlackTokens more): the slots' activations then lie at constant offsets
      // from one pointer per array, which leaves the registers to the arithmetic (a
      // pointer per slot and array did not fit, and the spills were a third of the
      // loop's loads).
      const int8_t* xq = a.q + args.t0 * 32;
      const float* xd = a.d + args.t0;
      const int32_t* xc = a.corr + args.t0;
      for (int64_t b = b0; b < b1; ++b) {
        pf.step_once();
        const uint8_t* q[P];
        const uint8_t* d[P];
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          q[p] = panel[p] + paired_q_offset(b, 512, stride[p]);
          d[p] = panel[p] + paired_d_offset(b, stride[p]);
        }
        q8_0_gemm_block<P, T>(q, d, xq + b * n * 32, xd + b * n, xc + b * n, acc);
      }
    }
    store_acc(args, acc);
  }
};

void matmul_q8_0(const MatmulCall& c) { run_tiles<Q8_0Kind>(c); }

// The ceiling of the Q8_0 product on this target: the GEMM tile's block step
// (kQ8GemmPanels x kQ8GemmTokens) over kProbeBlocks blocks that stay in the
// first-level cache, `rounds` times, with no memory traffic, dispatch, chunking or
// activation quantization. Returns the int8 multiply-adds done.
double q8_0_tile_probe(int64_t rounds) {
  constexpr int P = kQ8GemmPanels, T = kQ8GemmTokens, kProbeBlocks = 8;
  alignas(64) static const struct Data {
    uint8_t q[P][kProbeBlocks][512];
    uint16_t d[P][kProbeBlocks][16];
    int8_t xq[kProbeBlocks][T * 32];
    float xd[kProbeBlocks][T];
    int32_t xc[kProbeBlocks][T];
    Data() : q(), d(), xq(), xd(), xc() {
      for (int b = 0; b < kProbeBlocks; ++b) {
        for (int p = 0; p < P; ++p) {
          for (int i = 0; i < 512; ++i) q[p][b][i] = static_cast<uint8_t>(37 * i + 11 * b + p);
          for (uint16_t& h : d[p][b]) h = 0x1400;  // 2^-10
        }
        for (int i = 0; i < T * 32; ++i) xq[b][i] = static_cast<int8_t>(29 * i + b - 64);
        for (int t = 0; t < T; ++t) xd[b][t] = 1.0f / 1024, xc[b][t] = -128 * (t + b);
      }
    }
  } data;
  VF acc[P][T];
  for (auto& row : acc)
    for (VF& v : row) v = zero_f();
  for (int64_t r = 0; r < rounds; ++r) {
    for (int b = 0; b < kProbeBlocks; ++b) {
      const uint8_t* q[P];
      const uint8_t* d[P];
      for (int p = 0; p < P; ++p) q[p] = data.q[p][b], d[p] = reinterpret_cast<const uint8_t*>(data.d[p][b]);
      q8_0_gemm_block<P, T>(q, d, data.xq[b], data.xd[b], data.xc[b], acc);
    }
    __asm__ volatile("" ::: "memory");  // every round reads the blocks again
  }
  alignas(64) float lanes[16];
  float sum = 0;
  for (auto& row : acc)
    for (VF& v : row) store_f(lanes, v), sum += lanes[0];
  volatile float sink = sum;
  (void)sink;
  return static_cast<double>(rounds) * kProbeBlocks * P * T * 16 * 32;
}
