// Q6_K weights against K activations (blocks of 256). Per lane (row r, token t) and
// super-block, in order:
//   isum = sum_j sc_j * sum_{i in j} (q_w[i] - 32) * q_x[i]   (16 sub-blocks of 16)
//   acc  = fma(float(isum), d * d_x, acc)
// The dot takes the unsigned 6-bit levels; each sub-block's sum starts at
// corr = -32 * sum(q_x over the sub-block).
// Spliced into a target namespace after matmul_tiles-inl.h.

struct Q6_KKind : KQuantKind {

  template <int P, int T>
  static void tile(const MatmulCall& c, const TileArgs& args, int64_t sb0, int64_t sb1) {
    const PackedWeights& w = *c.w;
    const auto& a = *static_cast<const QuantizedActivations*>(c.x);
    TokenQ x[T];
    tile_tokens(a, args, 256, x);
    const int64_t n = a.n;
    const VI low4 = set1_i32(0x0F0F0F0F), bits45 = set1_i32(0x30303030);
    VF acc[P][T];
    load_acc(args, acc);
    // Sub-block j of the super-block at `body` (super-block sb) into isum.
    auto sub_block = [&](const uint8_t* body, int64_t sb, int j, VI (&isum)[T]) __attribute__((always_inline)) {
      const VI sc = load_s8_to_i32(reinterpret_cast<const int8_t*>(body) + 16 * j);
      const uint8_t* q = body + 256 + 192 * j;
      const VI va = load_i(q), vb = load_i(q + 64), vc = load_i(q + 128);
      const VI s0 = and_or(va, low4, and_i(slli_i32<4>(vc), bits45));
      const VI s1 = and_or(srli_i32<4>(va), low4, and_i(slli_i32<2>(vc), bits45));
      const VI s2 = and_or(vb, low4, and_i(vc, bits45));
      const VI s3 = and_or(srli_i32<4>(vb), low4, and_i(srli_i32<2>(vc), bits45));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const int8_t* xq = x[t].q + sb * n * 256 + 16 * j;
        VI v = set1_i32(x[t].corr[sb * n * 16 + j]);
        v = dot_u8s8_bcast(v, s0, xq);
        v = dot_u8s8_bcast(v, s1, xq + 4);
        v = dot_u8s8_bcast(v, s2, xq + 8);
        v = dot_u8s8_bcast(v, s3, xq + 12);
        isum[t] = add_i32(isum[t], mullo_i32(v, sc));
      }
    };
    auto finish = [&](int p, int64_t sb, int64_t stride, const VI (&isum)[T]) __attribute__((always_inline)) {
      const VF d = load_f16(reinterpret_cast<const uint16_t*>(w.panel(args.p0 + p) + paired_d_offset(sb, stride)));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[p][t] = fma_f(cvt_i2f(isum[t]), mul_f(d, set1_f(x[t].d[sb * n])), acc[p][t]);
    };
    if constexpr (interleaves_panels(kGemvPanels)) {
      // Targets whose panels are packed interleaved (see pack_weights()): block pair
      // by block pair (a stripe), and within it panel by panel, so that a GEMV reads
      // its group's stripes in ascending order.
      for (int64_t b0 = sb0; b0 < sb1;) {
        const int64_t b1 = pair_end(b0, sb1);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          const int64_t stride = w.stride(args.p0 + p);
          for (int64_t sb = b0; sb < b1; ++sb) {
            const uint8_t* body = w.panel(args.p0 + p) + paired_q_offset(sb, 3328, stride);
            VI isum[T];
#pragma GCC unroll 16
            for (int t = 0; t < T; ++t) isum[t] = zero_i();
            // Unrolled for decode only: the GEMM's token loop is long enough, and its
            // tile unrolled over the sub-blocks as well ran 13% slower.
            if constexpr (T == 1) {
#pragma GCC unroll 16
              for (int j = 0; j < 16; ++j) sub_block(body, sb, j, isum);
            } else {
              for (int j = 0; j < 16; ++j) sub_block(body, sb, j, isum);
            }
            finish(p, sb, stride, isum);
          }
        }
        b0 = b1;
      }
    } else {
      // Targets whose panels are packed contiguous: super-block by super-block, and
      // within it sub-block by sub-block across the panels (P independent chains where
      // registers are few).
      for (int64_t sb = sb0; sb < sb1; ++sb) {
        const uint8_t* body[P];
        VI isum[P][T];
        for (int p = 0; p < P; ++p) {
          body[p] = w.panel(args.p0 + p) + paired_q_offset(sb, 3328, w.stride(args.p0 + p));
          for (int t = 0; t < T; ++t) isum[p][t] = zero_i();
        }
        for (int j = 0; j < 16; ++j) {
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p) {
            if constexpr (T == 1) {
              // Decode: this sub-block's share of the next super-block.
              for (int i = 0; i < 208; i += 64) __builtin_prefetch(body[p] + 3328 + 208 * j + i, 0, kPrefetchLocality);
            }
            sub_block(body[p], sb, j, isum[p]);
          }
        }
        for (int p = 0; p < P; ++p) finish(p, sb, w.stride(args.p0 + p), isum[p]);
      }
    }
    store_acc(args, acc);
  }
};

void matmul_q6_k(const MatmulCall& c) { run_tiles<Q6_KKind>(c); }
