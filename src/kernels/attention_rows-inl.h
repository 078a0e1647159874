// One step of paged attention's online softmax for several query rows against a span
// of KV blocks (see AttentionRows in kernel_table.h). Per row r, in order, j running
// over the keys of the span:
//   s[j]  = ((p0 + p1) + (p2 + p3)) * scale, p_u = fma chain over d = u (mod 4) of
//           q[d] * kt[d][j], for j < valid
//   m'    = max(m, s[j]);  e[j] = exp(s[j] - m');  c = exp(m - m')
//   l     = l * c + sum(e)            (16 lanes in order of j, then reduce_add_f)
//   acc   = acc * c, then acc = fma(e[j], v_j, acc) for j = 0 .. valid - 1
// Rows are independent: processing kAttentionRows of them together only interleaves
// their instruction streams (the keys and values are loaded once for all of them), so
// a row's result does not depend on which rows share its call.
// Spliced into a target namespace after ops-inl.h.

// Scores of G groups of keys for R rows, group i being keys [j[i], j[i] + k) of the
// span's block g[i] (k = 16 when kFull; a partial group comes alone, G = 1), four
// partial sums each; keys from a.kt_f16 when kF16, else a.kt. A key's arithmetic does
// not depend on G: several groups only interleave their instruction streams, so that
// their blocks (which lie apart in the pool) are read side by side.
template <int R, int G, bool kFull, bool kF16>
LLMS_SIMD void attention_scores(const AttentionRows& a, const int (&g)[G], const int (&j)[G],
                                const float* const (&q)[R], float* const (&s)[R], int k) {
  static_assert(kFull || G == 1);
  const int B = a.block, hd = a.head_dim;
  auto load = [&](const auto* p) {
    if constexpr (kF16) {
      return kFull ? load_f16(p) : load_part_f16(p, k);
    } else {
      return kFull ? load_f(p) : load_part_f(p, k);
    }
  };
  using Elem = std::conditional_t<kF16, uint16_t, float>;
  const Elem* kt[G];
  VF p[G][R][4];
#pragma GCC unroll 4
  for (int i = 0; i < G; ++i) {
    if constexpr (kF16) {
      kt[i] = a.kt_f16[g[i]] + j[i];
    } else {
      kt[i] = a.kt[g[i]] + j[i];
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) p[i][r][0] = p[i][r][1] = p[i][r][2] = p[i][r][3] = zero_f();
  }
  int d = 0;
  for (; d + 4 <= hd; d += 4) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
#pragma GCC unroll 4
      for (int i = 0; i < G; ++i) {
        const VF kv = load(kt[i] + (d + u) * B);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) p[i][r][u] = fma_f(set1_f(q[r][d + u]), kv, p[i][r][u]);
      }
    }
  }
#pragma GCC unroll 3
  for (int u = 0; u < 3; ++u) {
    if (d + u < hd) {
#pragma GCC unroll 4
      for (int i = 0; i < G; ++i) {
        const VF kv = load(kt[i] + (d + u) * B);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) p[i][r][u] = fma_f(set1_f(q[r][d + u]), kv, p[i][r][u]);
      }
    }
  }
  const VF scale = set1_f(a.scale);
#pragma GCC unroll 4
  for (int i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const VF v = mul_f(add_f(add_f(p[i][r][0], p[i][r][1]), add_f(p[i][r][2], p[i][r][3])), scale);
      if (kFull) {
        store_f(s[r] + g[i] * B + j[i], v);
      } else {
        store_part_f(s[r] + g[i] * B + j[i], v, k);
      }
    }
  }
}

// The span's scores, full groups of 16 keys G at a time (fewer at the end), then each
// block's partial group.
template <int R, bool kF16>
LLMS_SIMD void attention_span_scores(const AttentionRows& a, const float* const (&q)[R], float* const (&s)[R],
                                     int n_blocks) {
  constexpr int G = R >= 4 ? 1 : 4 / R;
  const int B = a.block, valid = a.valid;
  int gs[G], js[G], n = 0;
  auto flush = [&] {
    if (n == G) {
      attention_scores<R, G, true, kF16>(a, gs, js, q, s, 16);
    } else {
      for (int i = 0; i < n; ++i) attention_scores<R, 1, true, kF16>(a, {gs[i]}, {js[i]}, q, s, 16);
    }
    n = 0;
  };
  for (int g = 0; g < n_blocks; ++g) {
    const int keys = std::min(B, valid - g * B);
    for (int j = 0; j + 16 <= keys; j += 16) {
      gs[n] = g, js[n] = j, ++n;
      if (n == G) flush();
    }
  }
  flush();
  for (int g = 0; g < n_blocks; ++g) {
    const int keys = std::min(B, valid - g * B);
    const int j = keys / 16 * 16;
    if (j < keys) attention_scores<R, 1, false, kF16>(a, {g}, {j}, q, s, keys - j);
  }
}

template <int R>
LLMS_SIMD void attention_rows_tile(const AttentionRows& a, int r0) {
  const int B = a.block, hd = a.head_dim, valid = a.valid;
  const int n_blocks = (valid + B - 1) / B;
  const int stride = (n_blocks * B + 15) / 16 * 16;
  float* s[R];
  const float* q[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) s[r] = a.scores + (r0 + r) * stride, q[r] = a.q[r0 + r];
  if (a.kt_f16[0] != nullptr) {
    attention_span_scores<R, true>(a, q, s, n_blocks);
  } else {
    attention_span_scores<R, false>(a, q, s, n_blocks);
  }
  // Soft-capping (Gemma-2): scalar tanh, the same on every target.
  if (a.softcap > 0.0f) {
    const float cap = a.softcap, inv_cap = 1.0f / a.softcap;
    for (int r = 0; r < R; ++r)
      for (int j = a.first; j < valid; ++j) s[r][j] = cap * std::tanh(s[r][j] * inv_cap);
  }
  // Keys before the window: -inf, so that their exponentials are 0 (a call always has
  // a key in the window, so the new maximum is finite).
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < a.first; ++j) s[r][j] = -INFINITY;
  // Online softmax: new maxima, exponentials, and the factor c of the old state.
  float c[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const float m_old = a.m[r0 + r];
    VF mx = set1_f(m_old);
    for (int j = 0; j < valid; j += 16) {
      const int k = std::min(16, valid - j);
      // Missing lanes repeat m_old, which is already in the max.
      mx = k == 16 ? max_f(mx, load_f(s[r] + j)) : max_f(mx, select_part_f(load_part_f(s[r] + j, k), set1_f(m_old), k));
    }
    const float m_new = reduce_max_f(mx);
    const VF vm = set1_f(m_new);
    VF sum = zero_f();
    for (int j = 0; j < valid; j += 16) {
      const int k = std::min(16, valid - j);
      const VF e = exp_f(sub_f(load_n(s[r] + j, k), vm));
      store_n(s[r] + j, e, k);
      sum = add_f(sum, k == 16 ? e : select_part_f(e, zero_f(), k));
    }
    c[r] = first_f(exp_f(set1_f(m_old - m_new)));
    a.l[r0 + r] = a.l[r0 + r] * c[r] + reduce_add_f(sum);
    a.m[r0 + r] = m_new;
  }
  // acc = acc * c + sum_j e[j] v_j, 64 dimensions (four vectors) at a time.
  for (int d0 = 0; d0 < hd; d0 += 64) {
    int width[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) width[u] = std::clamp(hd - d0 - 16 * u, 0, 16);
    VF acc[R][4];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* row = a.acc + static_cast<int64_t>(r0 + r) * hd + d0;
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) acc[r][u] = mul_f(load_n(row + 16 * u, width[u]), set1_f(c[r]));
    }
    // Key j of the span is row j % B of block j / B.
    auto accumulate = [&](auto load_v) {
      for (int g = 0; g < n_blocks; ++g) {
        const int keys = std::min(B, valid - g * B);
        for (int j = 0; j < keys; ++j) {
          VF vv[4];
#pragma GCC unroll 4
          for (int u = 0; u < 4; ++u) vv[u] = load_v(g, j, u);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            const VF e = set1_f(s[r][g * B + j]);
#pragma GCC unroll 4
            for (int u = 0; u < 4; ++u) acc[r][u] = fma_f(e, vv[u], acc[r][u]);
          }
        }
      }
    };
    if (a.v_f16[0] != nullptr) {  // widths are 0 or 16
      accumulate([&](int g, int j, int u) {
        return width[u] > 0 ? load_f16(a.v_f16[g] + j * a.v_stride + d0 + 16 * u) : zero_f();
      });
    } else {
      accumulate([&](int g, int j, int u) { return load_n(a.v[g] + j * a.v_stride + d0 + 16 * u, width[u]); });
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* row = a.acc + static_cast<int64_t>(r0 + r) * hd + d0;
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u)
        if (width[u] > 0) store_n(row + 16 * u, acc[r][u], width[u]);
    }
  }
}

void attention_rows(const AttentionRows& a) {
  int r = 0;
  for (; r + kAttentionRows <= a.rows; r += kAttentionRows) attention_rows_tile<kAttentionRows>(a, r);
  if constexpr (kAttentionRows > 2) {
    for (; r + 2 <= a.rows; r += 2) attention_rows_tile<2>(a, r);
  }
  for (; r < a.rows; ++r) attention_rows_tile<1>(a, r);
}
