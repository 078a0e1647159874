// Quantization of activation rows for the integer kernels (formats in
// kernel_table.h), rounded as GGML rounds its Q8_0, Q8_1 and Q8_K blocks, so that a
// product rounds as llama.cpp's does. Every step is exact or correctly rounded IEEE
// arithmetic (max of |x|, divisions, one multiply, round to nearest even, F16
// rounding), so all targets and the scalar reference produce the same bytes.
// Spliced into a target namespace after the simd_*-inl.h header.

// Blocks of 32: q = round(x * (127 / max|x|)); d = max|x| / 127 and
// s = (max|x| / 127) * sum(q) stored rounded to F16. Per 16 blocks: their maxima
// first, then both divisions for all 16 in one vector division each (two scalar
// divisions a block, latency-bound, were the row's slowest part), then the blocks'
// values. The F16 roundings of 16 blocks take one vector conversion each way (the
// scalar conversion, done in software, cost tens of instructions and branches per
// value).
void quantize_q8_row(const float* x, int64_t t, int bias, const QuantizedActivations& out) {
  const int64_t cols = out.cols, nb = cols / 32, n = out.n;
  const float* xt = x + t * cols;
  for (int64_t b0 = 0; b0 < nb; b0 += 16) {
    const int g = static_cast<int>(std::min<int64_t>(16, nb - b0));
    const float* xb = xt + 32 * b0;
    alignas(64) float amax[16] = {};
    for (int i = 0; i < g; ++i) {
      amax[i] = reduce_max_f(max_f(abs_f(load_f(xb + 32 * i)), abs_f(load_f(xb + 32 * i + 16))));
    }
    const VF am = load_f(amax), k127 = set1_f(127.0f);
    const VF d = div_f(am, k127);  // 0 in the lanes past g
    alignas(64) float inv[16];
    store_f(inv, div_f(k127, am));  // +inf where max|x| = 0: id is 0 there
    alignas(64) int32_t sum[16] = {};
    for (int i = 0; i < g; ++i) {
      const int64_t b = b0 + i;
      int8_t* q = out.q + (b * n + t) * 32;
      const float id = amax[i] != 0.0f ? inv[i] : 0.0f;
      const VF v0 = load_f(xb + 32 * i), v1 = load_f(xb + 32 * i + 16);
      const VI q0 = cvt_round_f2i(mul_f(v0, set1_f(id))), q1 = cvt_round_f2i(mul_f(v1, set1_f(id)));
      store_i8(q, q0);
      store_i8(q + 16, q1);
      sum[i] = reduce_add_i32(add_i32(q0, q1));
      out.corr[b * n + t] = -bias * sum[i];
    }
    alignas(64) float dh[16], sh[16];
    store_f(dh, round_f16(d));
    store_f(sh, round_f16(mul_f(d, cvt_i2f(load_i(sum)))));
    for (int i = 0; i < g; ++i) {
      out.d[(b0 + i) * n + t] = dh[i];
      out.s[(b0 + i) * n + t] = sh[i];
    }
  }
}

// pshufb patterns within each 16 bytes: swap the 8-byte halves; swap the 4-byte words
// of each half.
alignas(16) inline constexpr int8_t kSwapHalves[16] = {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7};
alignas(16) inline constexpr int8_t kSwapWords[16] = {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11};

// Blocks of 256 (q = round(x * id), id = 127 / max|x|, d = 1 / id) with sums over 16 (corr = -32 * sum) and over 32 (int16 pairs).
void quantize_k_row(const float* x, int64_t t, int /*bias*/, const QuantizedActivations& out) {
  const int64_t cols = out.cols, nb = cols / 256, n = out.n;
  const float* xt = x + t * cols;
  const VI ones = set1_i32(0x01010101);
  const VI swap64 = bytes_pattern(kSwapHalves), swap32 = bytes_pattern(kSwapWords);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = xt + 256 * b;
    int8_t* q = out.q + (b * n + t) * 256;
    int32_t* corr = out.corr + (b * n + t) * 16;
    int32_t* pairs = out.pairs + (b * n + t) * 4;
    VF m = zero_f();
    for (int i = 0; i < 16; ++i) m = max_f(m, abs_f(load_f(xb + 16 * i)));
    const float amax = reduce_max_f(m);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const float db = amax != 0.0f ? 1.0f / id : 0.0f;
    for (int i = 0; i < 16; ++i) store_i8(q + 16 * i, cvt_round_f2i(mul_f(load_f(xb + 16 * i), set1_f(id))));
    // The sum of each 16 q: a dot with ones gives sums of 4 in every int32 lane, two
    // shuffle-adds within each 16-byte lane (one group of 16) the group's sum in all
    // four of its lanes. Exact integer sums, as 16 horizontal reductions would be.
    alignas(64) int32_t lanes[4][16];
    for (int v = 0; v < 4; ++v) {
      VI t = dot_u8s8(zero_i(), ones, load_i(q + 64 * v));
      t = add_i32(t, shuffle_bytes(t, swap64));
      t = add_i32(t, shuffle_bytes(t, swap32));
      store_i(lanes[v], t);
    }
    int32_t sums[16];
    for (int i = 0; i < 16; ++i) {
      sums[i] = lanes[i / 4][4 * (i % 4)];
      corr[i] = -32 * sums[i];
    }
    for (int i = 0; i < 4; ++i) {
      const int32_t lo = sums[4 * i] + sums[4 * i + 1], hi = sums[4 * i + 2] + sums[4 * i + 3];
      pairs[i] = static_cast<int32_t>((static_cast<uint32_t>(lo) & 0xFFFF) | (static_cast<uint32_t>(hi) << 16));
    }
    out.d[b * n + t] = db;
  }
}
