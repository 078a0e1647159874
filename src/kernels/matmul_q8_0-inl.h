// Q8_0 weights against Q8 activations (blocks of 32). Per lane (row r, token t) and
// block b, in order:
//   isum = sum_i q_w[i] * q_x[i]                      (exact int32)
//   acc  = fma(float(isum), d_w * d_x, acc)
// The packed weights hold q + 128; targets whose dot takes unsigned bytes start isum
// at corr = -128 * sum(q_x) (KernelTable::q8_0_bias), the others at 0.
// Spliced into a target namespace after matmul_tiles-inl.h.

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
      // Prefill: block by block, each step of the block for all panels, so that a
      // token's activations are loaded once for all panels (6 points of peak more than
      // the decode order here). Slot t reads token t0 + t, even past `valid` (its
      // results are dropped; QuantizedActivations holds kTileSlackTokens more): the
      // slots' activations then lie at constant offsets from one pointer per array,
      // which leaves the registers to the arithmetic (a pointer per slot and array
      // did not fit, and the spills were a third of the loop's loads).
      const int8_t* xq = a.q + args.t0 * 32;
      const float* xd = a.d + args.t0;
      const int32_t* xc = a.corr + args.t0;
      for (int64_t b = b0; b < b1; ++b) {
        pf.step_once();
        const int8_t* qb = xq + b * n * 32;
        VI isum[P][T];
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) isum[p][t] = set1_i32(xc[b * n + t]);
#pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
          VI wv[P];
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p) wv[p] = load_i(panel[p] + paired_q_offset(b, 512, stride[p]) + s * 64);
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) {
            const VI xv = bcast_i32(qb + 32 * t + 4 * s);
#pragma GCC unroll 16
            for (int p = 0; p < P; ++p) isum[p][t] = dot_q8(isum[p][t], wv[p], xv);
          }
        }
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          const VF d = load_f16(reinterpret_cast<const uint16_t*>(panel[p] + paired_d_offset(b, stride[p])));
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t) acc[p][t] = fma_f(cvt_i2f(isum[p][t]), mul_f(d, set1_f(xd[b * n + t])), acc[p][t]);
        }
      }
    }
    store_acc(args, acc);
  }
};

void matmul_q8_0(const MatmulCall& c) { run_tiles<Q8_0Kind>(c); }
