// F32, F16 and BF16 weights against float activations. Per lane (row r, token t):
//   acc = 0; for k ascending: acc = fma(w[r, k], x[t, k], acc)
// F16 and BF16 widen to float exactly, so every target computes the same bits.
// Spliced into a target namespace after matmul_tiles-inl.h.

struct LoadF32 {
  static LLMS_SIMD VF at(const uint8_t* panel, int64_t k) { return load_f(reinterpret_cast<const float*>(panel) + k * 16); }
};
struct LoadF16 {
  static LLMS_SIMD VF at(const uint8_t* panel, int64_t k) { return load_f16(reinterpret_cast<const uint16_t*>(panel) + k * 16); }
};
struct LoadBF16 {
  static LLMS_SIMD VF at(const uint8_t* panel, int64_t k) { return load_bf16(reinterpret_cast<const uint16_t*>(panel) + k * 16); }
};

template <class Load>
struct FloatKind {
  static constexpr int kGemv = kGemvPanels;
  static constexpr int kPanels = kFloatGemmPanels;
  static constexpr int kTokens = kFloatGemmTokens;
  static constexpr int64_t kChunk = kFloatGemmChunk;
  static int64_t units(const PackedWeights& w) { return w.cols; }

  template <int P, int T>
  static void tile(const MatmulCall& c, const TileArgs& args, int64_t k0, int64_t k1) {
    const PackedWeights& w = *c.w;
    const int64_t cols = w.cols;
    const uint8_t* panel[P];
    for (int p = 0; p < P; ++p) panel[p] = w.panel(args.p0 + p);
    const float* xt[T];
    for (int t = 0; t < T; ++t) xt[t] = static_cast<const float*>(c.x) + token_of(args, t) * cols;
    VF acc[P][T];
    load_acc(args, acc);
    for (int64_t k = k0; k < k1; ++k) {
      VF wv[P];
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) wv[p] = Load::at(panel[p], k);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const VF xb = set1_f(xt[t][k]);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) acc[p][t] = fma_f(wv[p], xb, acc[p][t]);
      }
    }
    store_acc(args, acc);
  }
};

void matmul_f32(const MatmulCall& c) { run_tiles<FloatKind<LoadF32>>(c); }
void matmul_f16(const MatmulCall& c) { run_tiles<FloatKind<LoadF16>>(c); }
void matmul_bf16(const MatmulCall& c) { run_tiles<FloatKind<LoadBF16>>(c); }
