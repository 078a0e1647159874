// The loop over tiles shared by every weight kind: a tile is P panels (16 rows each)
// by T tokens, computed by Kind::tile<P, T>(call, panel, token, valid). GEMV (n = 1)
// walks Kind::kGemv panels at a time to keep several weight streams in flight; GEMM
// walks Kind::kPanels panels and, for each, every token in groups of Kind::kTokens,
// so the panels stay in cache while the activations stream past. Every lane of every
// tile shape performs the same operations in the same order, which is why the result
// for a token does not depend on n, on its position in the batch or on how panels
// are split between threads.
// Spliced into a target namespace after the simd_*-inl.h header.

// Writes lanes of v as rows [16p, 16p + 16) of one token's output row, dropping the
// padding rows of a last, partial panel.
LLMS_SIMD void store_rows(float* y_token, int64_t p, int64_t rows, VF v) {
  const int64_t r0 = p * kPanelRows;
  if (r0 + kPanelRows <= rows) {
    store_f(y_token + r0, v);
  } else {
    store_part_f(y_token + r0, v, static_cast<int>(rows - r0));
  }
}

// The last r < Kind::kTokens tokens go to the smallest tile of 1, 2, 4, 8, ... tokens
// (at most kTokens) that holds them; its spare slots repeat the last token and their
// results are dropped. Few tile shapes keep compile time down, and small batches are
// bound by streaming the weights, not by the spare arithmetic.
template <class Kind, int P, int R>
inline void token_tail(const MatmulCall& c, int64_t p, int64_t t, int64_t r) {
  if constexpr (R >= Kind::kTokens) {
    Kind::template tile<P, Kind::kTokens>(c, p, t, r);
  } else {
    if (r <= R) {
      Kind::template tile<P, R>(c, p, t, r);
    } else {
      token_tail<Kind, P, 2 * R>(c, p, t, r);
    }
  }
}

template <class Kind, int P>
inline void panel_tokens(const MatmulCall& c, int64_t p) {
  constexpr int T = Kind::kTokens;
  int64_t t = 0;
  for (; t + T <= c.n; t += T) Kind::template tile<P, T>(c, p, t, T);
  if (t < c.n) token_tail<Kind, P, 1>(c, p, t, c.n - t);
}

// GEMV over panels [p, end): tiles of P panels, then of P / 2, ... for the rest.
template <class Kind, int P>
inline void gemv_panels(const MatmulCall& c, int64_t p, int64_t end) {
  for (; p + P <= end; p += P) Kind::template tile<P, 1>(c, p, 0, 1);
  if constexpr (P > 1) gemv_panels<Kind, P / 2>(c, p, end);
}

template <class Kind>
void run_tiles(const MatmulCall& c) {
  int64_t p = c.panel_begin;
  if (c.n == 1) {
    gemv_panels<Kind, Kind::kGemv>(c, p, c.panel_end);
    return;
  }
  for (; p + Kind::kPanels <= c.panel_end; p += Kind::kPanels) panel_tokens<Kind, Kind::kPanels>(c, p);
  for (; p < c.panel_end; ++p) panel_tokens<Kind, 1>(c, p);
}

// Token slot t of a tile starting at t0 with `valid` real tokens.
LLMS_SIMD int64_t token_of(int64_t t0, int t, int64_t valid) { return t0 + (t < valid ? t : valid - 1); }

// Per-token views of QuantizedActivations for blocks of `block` values.
struct TokenQ {
  const int8_t* q;
  const float* d;
  const int32_t* corr;
  const int32_t* pairs;
};
LLMS_SIMD TokenQ token_q(const QuantizedActivations& a, int64_t t, int64_t block, int64_t corr_block) {
  return {a.q + t * a.cols, a.d + t * (a.cols / block), a.corr + t * (a.cols / corr_block),
          a.pairs ? a.pairs + t * (a.cols / 64) : nullptr};
}
