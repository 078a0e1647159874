// Quantization of activation rows for the integer kernels (formats in
// kernel_table.h), rounded as GGML rounds its Q8_0, Q8_1 and Q8_K blocks, so that a
// product rounds as llama.cpp's does. Every step is exact or correctly rounded IEEE
// arithmetic (max of |x|, divisions, one multiply, round to nearest even, F16
// rounding), so all targets and the scalar reference produce the same bytes.
// Spliced into a target namespace after the simd_*-inl.h header.

inline float round_to_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

// Blocks of 32: q = round(x * (127 / max|x|)); d = max|x| / 127 and
// s = (max|x| / 127) * sum(q) stored rounded to F16.
void quantize_q8_row(const float* x, int64_t t, int bias, const QuantizedActivations& out) {
  const int64_t cols = out.cols, nb = cols / 32, n = out.n;
  const float* xt = x + t * cols;
  for (int64_t b = 0; b < nb; ++b) {
    int8_t* q = out.q + (b * n + t) * 32;
    const VF v0 = load_f(xt + 32 * b), v1 = load_f(xt + 32 * b + 16);
    const float amax = reduce_max_f(max_f(abs_f(v0), abs_f(v1)));
    const float db = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const VI q0 = cvt_round_f2i(mul_f(v0, set1_f(id))), q1 = cvt_round_f2i(mul_f(v1, set1_f(id)));
    store_i8(q, q0);
    store_i8(q + 16, q1);
    const int32_t sum = reduce_add_i32(add_i32(q0, q1));
    out.d[b * n + t] = round_to_f16(db);
    out.s[b * n + t] = round_to_f16(db * static_cast<float>(sum));
    out.corr[b * n + t] = -bias * sum;
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
