// SIMD body of lora.h: a tile of up to kLoraTile tokens of one adapter's factors. The
// tile shares each load of A and B across its tokens; each token's arithmetic is the
// reference's (one FMA chain per rank and per output), so a tile of one is the same.
// Spliced into a target namespace after the simd_*-inl.h header.

void lora_tile(const LoraFactors& f, const float* x, const int32_t* tokens, int count, float* y) {
  constexpr int kTile = kLoraTile;
  alignas(64) float h[kTile][kMaxLoraRank];
  const int64_t cols = f.cols, rows = f.rows, rs = f.rank_stride;
  const float* xt[kTile];
  for (int t = 0; t < count; ++t) xt[t] = x + static_cast<int64_t>(tokens[t]) * cols;
  // h = A x: sixteen ranks per vector, one chain over the columns per rank.
  for (int64_t j0 = 0; j0 < rs; j0 += 16) {
    VF acc[kTile];
    for (int t = 0; t < kTile; ++t) acc[t] = zero_f();
    const float* a = f.at + j0;
    for (int64_t c = 0; c < cols; ++c) {
      const VF av = load_f(a + c * rs);
      for (int t = 0; t < count; ++t) acc[t] = fma_f(av, set1_f(xt[t][c]), acc[t]);
    }
    for (int t = 0; t < count; ++t) store_f(h[t] + j0, acc[t]);
  }
  // y += scale * B h: sixteen outputs per vector, one chain over the ranks per output.
  const VF scale = set1_f(f.scale);
  for (int64_t o = 0; o < rows; o += 16) {
    const int n = static_cast<int>(std::min<int64_t>(16, rows - o));
    VF acc[kTile];
    for (int t = 0; t < kTile; ++t) acc[t] = zero_f();
    for (int64_t j = 0; j < f.rank; ++j) {
      const VF bv = load_n(f.bt + j * rows + o, n);
      for (int t = 0; t < count; ++t) acc[t] = fma_f(bv, set1_f(h[t][j]), acc[t]);
    }
    for (int t = 0; t < count; ++t) {
      float* yt = y + static_cast<int64_t>(tokens[t]) * rows + o;
      store_n(yt, add_f(load_n(yt, n), mul_f(acc[t], scale)), n);
    }
  }
}
