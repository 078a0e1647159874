// SIMD body of lora.h: a tile of up to kLoraTile tokens of one adapter's factors. The
// tile shares each load of A and B across its tokens; each token's arithmetic is the
// reference's (one FMA chain per rank and per output), so a tile of one is the same.
// F16 factors are widened to F32 as they load (exactly), so both types run the same
// arithmetic. Spliced into a target namespace after the simd_*-inl.h header.

LLMS_SIMD VF lora_load(const float* p) { return load_f(p); }
LLMS_SIMD VF lora_load(const uint16_t* p) { return load_f16(p); }
LLMS_SIMD VF lora_load_n(const float* p, int n) { return load_n(p, n); }
LLMS_SIMD VF lora_load_n(const uint16_t* p, int n) { return load_part_f16(p, n); }

// `count` tokens, a compile-time constant so that the accumulators can stay in
// registers (with a run-time count, bench/lora_bench.cc's step of 4 tokens per adapter
// took 1.7 times as long).
template <int count, typename T>
void lora_tile_of(const LoraFactors& f, const T* at, const T* bt, const float* x, const int32_t* tokens, float* y) {
  constexpr int kTile = count;
  alignas(64) float h[kTile][kMaxLoraRank];
  const int64_t cols = f.cols, rows = f.rows, rs = f.rank_stride;
  const float* xt[kTile];
  for (int t = 0; t < count; ++t) xt[t] = x + static_cast<int64_t>(tokens[t]) * cols;
  // h = A x: sixteen ranks per vector, one chain over the columns per rank.
  for (int64_t j0 = 0; j0 < rs; j0 += 16) {
    VF acc[kTile];
    for (int t = 0; t < kTile; ++t) acc[t] = zero_f();
    const T* a = at + j0;
    for (int64_t c = 0; c < cols; ++c) {
      const VF av = lora_load(a + c * rs);
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
      const VF bv = lora_load_n(bt + j * rows + o, n);
      for (int t = 0; t < count; ++t) acc[t] = fma_f(bv, set1_f(h[t][j]), acc[t]);
    }
    for (int t = 0; t < count; ++t) {
      float* yt = y + static_cast<int64_t>(tokens[t]) * rows + o;
      store_n(yt, add_f(load_n(yt, n), mul_f(acc[t], scale)), n);
    }
  }
}

template <typename T>
void lora_tile_n(const LoraFactors& f, const T* at, const T* bt, const float* x, const int32_t* tokens, int count,
                 float* y) {
  static_assert(kLoraTile == 4);
  switch (count) {
    case 1: return lora_tile_of<1>(f, at, bt, x, tokens, y);
    case 2: return lora_tile_of<2>(f, at, bt, x, tokens, y);
    case 3: return lora_tile_of<3>(f, at, bt, x, tokens, y);
    default: return lora_tile_of<4>(f, at, bt, x, tokens, y);
  }
}

void lora_tile(const LoraFactors& f, const float* x, const int32_t* tokens, int count, float* y) {
  if (f.at_f16 != nullptr) {
    lora_tile_n(f, f.at_f16, f.bt_f16, x, tokens, count, y);
  } else {
    lora_tile_n(f, f.at, f.bt, x, tokens, count, y);
  }
}
