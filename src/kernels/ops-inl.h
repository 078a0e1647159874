// SIMD bodies of ops.h. Element-wise results follow the scalar references operation
// for operation except exp (a polynomial, within 2 ulp of std::exp) and the order of
// the sums in reductions (16 lanes, then a fixed tree).
// Spliced into a target namespace after the simd_*-inl.h header.

// exp(x) for x in [-87, 88] (clamped outside): x = n ln2 + r, |r| <= ln2 / 2,
// exp(r) by a degree-7 polynomial, 2^n built in the exponent bits.
LLMS_SIMD VF exp_f(VF x) {
  x = min_f(max_f(x, set1_f(-87.0f)), set1_f(88.0f));
  const VI n = cvt_round_f2i(mul_f(x, set1_f(1.44269504088896341f)));
  const VF fn = cvt_i2f(n);
  VF r = fnma_f(fn, set1_f(0.693359375f), x);
  r = fnma_f(fn, set1_f(-2.12194440e-4f), r);
  VF p = set1_f(1.9875691500e-4f);
  p = fma_f(p, r, set1_f(1.3981999507e-3f));
  p = fma_f(p, r, set1_f(8.3334519073e-3f));
  p = fma_f(p, r, set1_f(4.1665795894e-2f));
  p = fma_f(p, r, set1_f(1.6666665459e-1f));
  p = fma_f(p, r, set1_f(5.0000001201e-1f));
  const VF e = add_f(fma_f(p, mul_f(r, r), r), set1_f(1.0f));
  return mul_f(e, cast_i2f(slli_i32<23>(add_i32(n, set1_i32(127)))));
}

// Applies f(VF) -> VF to [0, n) of `in`, writing `out` (tail lanes masked).
template <class F>
LLMS_SIMD void for_each_vec(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) f(i, 16);
  if (i < n) f(i, static_cast<int>(n - i));
}
LLMS_SIMD VF load_n(const float* p, int n) { return n == 16 ? load_f(p) : load_part_f(p, n); }
LLMS_SIMD void store_n(float* p, VF v, int n) {
  if (n == 16) {
    store_f(p, v);
  } else {
    store_part_f(p, v, n);
  }
}

// F16 to float, exact on every target (every half is a float).
void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store_f(dst + i, load_f16(src + i));
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

// Float to the nearest F16 (ties to even), as f32_to_f16 on every target, NaNs included.
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store_f16(dst + i, load_f(src + i));
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

// Each float rounded to the nearest F16 (ties to even) and back, exact on every target.
void round_f16_row(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store_f(dst + i, round_f16(load_f(src + i)));
  for (; i < n; ++i) dst[i] = f16_to_f32(f32_to_f16(src[i]));
}

// Q8_0 blocks (an F16 scale, 32 int8 values) to floats: each value times its scale,
// one product as in the scalar decoding, so exact on every target.
void q8_0_row(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; i += 32, b += 34, dst += 32) {
    uint16_t h;
    std::memcpy(&h, b, 2);
    const VF d = set1_f(f16_to_f32(h));
    const auto* q = reinterpret_cast<const int8_t*>(b + 2);
    store_f(dst, mul_f(d, cvt_i2f(load_s8_to_i32(q))));
    store_f(dst + 16, mul_f(d, cvt_i2f(load_s8_to_i32(q + 16))));
  }
}

// A head's Q8_0 keys stored by column, 16 tokens of a dimension per vector; a block
// size that is not a multiple of 16 ends one token at a time.
void q8_0_columns(const uint16_t* scales, const int8_t* values, int64_t head_dim, int64_t block, float* kt) {
  for (int64_t g = 0; g < head_dim / 32; ++g) {
    const uint16_t* s = scales + g * block;
    int64_t r = 0;
    for (; r + 16 <= block; r += 16) {
      const VF d = load_f16(s + r);
      for (int64_t c = g * 32; c < g * 32 + 32; ++c) {
        store_f(kt + c * block + r, mul_f(d, cvt_i2f(load_s8_to_i32(values + c * block + r))));
      }
    }
    for (; r < block; ++r) {
      const float d = f16_to_f32(s[r]);
      for (int64_t c = g * 32; c < g * 32 + 32; ++c) kt[c * block + r] = d * static_cast<float>(values[c * block + r]);
    }
  }
}

float dot_f32(const float* a, const float* b, int64_t n) {
  VF acc = zero_f();
  for_each_vec(n, [&](int64_t i, int m) { acc = fma_f(load_n(a + i, m), load_n(b + i, m), acc); });
  return reduce_add_f(acc);
}

void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  const float ss = dot_f32(x, x, n);
  const VF scale = set1_f(1.0f / std::sqrt(ss / static_cast<float>(n) + eps));
  for_each_vec(n, [&](int64_t i, int m) { store_n(out + i, mul_f(mul_f(load_n(x + i, m), scale), load_n(w + i, m)), m); });
}

void layernorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out) {
  VF sum = zero_f();
  for_each_vec(n, [&](int64_t i, int m) { sum = add_f(sum, load_n(x + i, m)); });
  const float mean = reduce_add_f(sum) / static_cast<float>(n);
  const VF vmean = set1_f(mean);
  VF var = zero_f();
  for_each_vec(n, [&](int64_t i, int m) {
    // Tail lanes load as zero; mask their (0 - mean)^2 out by storing through n.
    VF dx = sub_f(load_n(x + i, m), vmean);
    if (m < 16) {
      float tmp[16] = {};
      store_part_f(tmp, dx, m);
      dx = load_f(tmp);
    }
    var = fma_f(dx, dx, var);
  });
  const VF inv = set1_f(1.0f / std::sqrt(reduce_add_f(var) / static_cast<float>(n) + eps));
  for_each_vec(n, [&](int64_t i, int m) {
    const VF y = mul_f(mul_f(sub_f(load_n(x + i, m), vmean), inv), load_n(w + i, m));
    store_n(out + i, b ? add_f(y, load_n(b + i, m)) : y, m);
  });
}

void rope(float* x, int n_heads, int head_dim, int half, const float* cs, RopeStyle style) {
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    if (style == RopeStyle::kNeox) {
      const float *c = cs, *s = cs + half;
      for_each_vec(half, [&](int64_t i, int m) {
        const VF x0 = load_n(v + i, m), x1 = load_n(v + half + i, m);
        const VF cv = load_n(c + i, m), sv = load_n(s + i, m);
        store_n(v + i, sub_f(mul_f(x0, cv), mul_f(x1, sv)), m);
        store_n(v + half + i, add_f(mul_f(x0, sv), mul_f(x1, cv)), m);
      });
    } else {
      // cs holds cos and +-sin expanded to each element of a pair (ops.cc).
      const float *c = cs, *s = cs + 2 * half;
      for_each_vec(2 * half, [&](int64_t i, int m) {
        const VF xv = load_n(v + i, m);
        store_n(v + i, add_f(mul_f(xv, load_n(c + i, m)), mul_f(swap_pairs_f(xv), load_n(s + i, m))), m);
      });
    }
  }
}

float softmax_step(float* x, int64_t n, float m_old, float* m_new) {
  VF m = set1_f(m_old);
  for_each_vec(n, [&](int64_t i, int k) {
    if (k == 16) {
      m = max_f(m, load_f(x + i));
    } else {  // the missing lanes repeat m_old, which is already in the max
      float tmp[16];
      std::fill(tmp, tmp + 16, m_old);
      std::memcpy(tmp, x + i, static_cast<size_t>(k) * sizeof(float));
      m = max_f(m, load_f(tmp));
    }
  });
  *m_new = reduce_max_f(m);
  const VF vs = set1_f(*m_new);
  VF sum = zero_f();
  for_each_vec(n, [&](int64_t i, int k) {
    const VF e = exp_f(sub_f(load_n(x + i, k), vs));
    store_n(x + i, e, k);
    if (k < 16) {
      float tmp[16] = {};
      store_part_f(tmp, e, k);
      sum = add_f(sum, load_f(tmp));
    } else {
      sum = add_f(sum, e);
    }
  });
  return reduce_add_f(sum);
}

void softmax(float* x, int64_t n) {
  float max;
  const VF inv = set1_f(1.0f / softmax_step(x, n, x[0], &max));
  for_each_vec(n, [&](int64_t i, int k) { store_n(x + i, mul_f(load_n(x + i, k), inv), k); });
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  const VF one = set1_f(1.0f);
  for_each_vec(n, [&](int64_t i, int k) {
    const VF g = load_n(gate + i, k);
    const VF e = exp_f(sub_f(zero_f(), g));
    store_n(out + i, mul_f(div_f(g, add_f(one, e)), load_n(up + i, k)), k);
  });
}

// 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), u = sqrt(2 / pi) (v + 0.044715 v^3).
void gelu(const float* x, int64_t n, float* out) {
  const VF one = set1_f(1.0f), k0 = set1_f(-2.0f * 0.79788456080286535588f), k1 = set1_f(0.044715f);
  for_each_vec(n, [&](int64_t i, int k) {
    const VF v = load_n(x + i, k);
    const VF inner = mul_f(k0, fma_f(mul_f(k1, v), mul_f(v, v), v));
    store_n(out + i, div_f(v, add_f(one, exp_f(inner))), k);
  });
}

void add_inplace(float* y, const float* x, int64_t n) {
  for_each_vec(n, [&](int64_t i, int k) { store_n(y + i, add_f(load_n(y + i, k), load_n(x + i, k)), k); });
}
