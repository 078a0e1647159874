// The loop over tiles shared by every weight kind. A tile is P panels (16 rows each)
// by T tokens over a range of the reduction: Kind::tile<P, T>(c, tiles, k0, k1)
// carries the accumulators of its P x T outputs across units [k0, k1) of the columns
// (Kind::units(w) of them: blocks, super-blocks or columns), starting from and
// returning to an accumulator array in memory.
//
// GEMV (n = 1) walks Kind::kGemv panels at a time over all columns, to keep several
// weight streams in flight. GEMM walks Kind::kPanels panels at a time and streams them
// once: for each chunk of Kind::kChunk units, every token of the batch (up to
// kBatchTokens at a time, in tiles of Kind::kTokens) passes over the chunk while it is
// in the first-level cache, and the chunks after it are prefetched. Weights are thus
// read from memory once per product, at an even pace that hides the memory's latency
// behind the arithmetic, however many tokens there are.
//
// Every lane of every tile shape performs the same operations in the same order, and
// the accumulators go through memory unrounded (a float stays a float), which is why
// the result for a token does not depend on n, on its position in the batch, on the
// chunking or on how panels are split between threads.
// Spliced into a target namespace after the simd_*-inl.h header.

// Tokens whose accumulators one pass over a panel group keeps (in memory, P x 64 x 64
// bytes at most); larger batches take several passes.
inline constexpr int kBatchTokens = 64;
// The tiles of a chunk that prefetch the next chunk's weights, in equal slices: the
// first two. The others then pay no prefetch bookkeeping per block, and the weights
// are asked for early in the chunk (docs/benchmarks.md: 5-15% on GEMMs of 32 tokens
// and 6% on 512 against slices in every tile).
inline constexpr int64_t kPrefetchTiles = 2;

// Where a tile reads and writes its accumulators: acc[p * stride + t] for panel p and
// token slot t, the slot of token t0 + t.
struct TileArgs {
  int64_t p0;     // first panel
  int64_t t0;     // first token
  int64_t valid;  // real tokens; slots from `valid` on repeat the last one
  VF* acc;
  int64_t stride;
  // Weights of the next chunk that this tile brings towards the caches, spread over
  // its units: bytes [pf, pf + pf_bytes) of panels [pf_panel, pf_panel + P) (as
  // PackedWeights::at() counts them); none when pf_bytes is 0.
  int64_t pf_panel;
  int64_t pf;
  int64_t pf_bytes;
  // The first chunk starts from zero rather than from `acc`; the last one writes its
  // results straight into the output rows (y, of `rows` rows per token) rather than
  // into `acc`, so that those stores spread over the tiles' arithmetic instead of
  // coming in a burst after it.
  bool zero_start = false;
  float* y = nullptr;
  int64_t rows = 0;
};

// Token slot t of a tile with `valid` real tokens.
LLMS_SIMD int64_t slot_of(int t, int64_t valid) { return t < valid ? t : valid - 1; }
LLMS_SIMD int64_t token_of(const TileArgs& a, int t) { return a.t0 + slot_of(t, a.valid); }

template <int P, int T>
LLMS_SIMD void load_acc(const TileArgs& a, VF (&acc)[P][T]) {
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[p][t] = a.zero_start ? zero_f() : a.acc[p * a.stride + slot_of(t, a.valid)];
}

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

template <int P, int T>
LLMS_SIMD void store_acc(const TileArgs& a, const VF (&acc)[P][T]) {
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      if (t >= a.valid) continue;
      if (a.y != nullptr) {
        store_rows(a.y + (a.t0 + t) * a.rows, a.p0 + p, a.rows, acc[p][t]);
      } else {
        a.acc[p * a.stride + t] = acc[p][t];
      }
    }
}

// The last r < Kind::kTokens tokens go to the smallest tile of 1, 2, 4, 8, ... tokens
// (at most kTokens) that holds them; its spare slots repeat the last token and their
// results are dropped. Few tile shapes keep compile time down, and the spare slots
// cost little next to the tiles before them.
template <class Kind, int P, int R>
inline void token_tail(const MatmulCall& c, TileArgs a, int64_t k0, int64_t k1) {
  if constexpr (R >= Kind::kTokens) {
    Kind::template tile<P, Kind::kTokens>(c, a, k0, k1);
  } else {
    if (a.valid <= R) {
      Kind::template tile<P, R>(c, a, k0, k1);
    } else {
      token_tail<Kind, P, 2 * R>(c, a, k0, k1);
    }
  }
}

// A tile's share of the next chunk's weights, prefetched in equal steps before each
// of its `count` units, up to the end of the call's range. A cursor per panel walks
// the panel's bytes stripe by stripe (no division per line).
template <int P>
struct ChunkPrefetch {
  LLMS_SIMD ChunkPrefetch(const MatmulCall& c, const TileArgs& a, int64_t count) {
    const PackedWeights& w = *c.w;
    step = (a.pf_bytes + count - 1) / count;
    stripe = w.stripe_bytes;
    for (int p = 0; p < P; ++p) {
      // Nothing past the call's panels.
      left[p] = a.pf_panel + p < c.panel_end ? a.pf_bytes : 0;
      if (left[p] == 0) continue;
      next[p] = w.at(a.pf_panel + p, a.pf);
      in_stripe[p] = stripe - a.pf % stripe;
      jump[p] = w.stride(a.pf_panel + p) - stripe;
    }
  }
  LLMS_SIMD void step_once() {
    // Unrolled over the panels, so that the cursors stay in registers rather than on
    // the stack (a store and a load per cursor and line).
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) {
      for (int64_t done = 0; done < step && left[p] > 0; done += 64, left[p] -= 64) {
        __builtin_prefetch(next[p], 0, kPrefetchLocality);
        next[p] += 64;
        if ((in_stripe[p] -= 64) <= 0) next[p] += jump[p], in_stripe[p] += stripe;  // into the next stripe
      }
    }
  }
  const uint8_t* next[P] = {};
  int64_t left[P] = {};
  int64_t in_stripe[P] = {};
  int64_t jump[P] = {};
  int64_t step;
  int64_t stripe;
};

// Units per chunk: at most about Kind::kChunk, and the chunks of a row equal (an even
// number of units, for the paired layouts), so that no short last chunk pays a tile
// pass's fixed costs for little arithmetic.
template <class Kind>
LLMS_SIMD int64_t chunk_units(int64_t units) {
  const int64_t chunks = (units + Kind::kChunk - 1) / Kind::kChunk;
  return ((units + chunks - 1) / chunks + 1) / 2 * 2;
}

// The bytes of each panel that the chunk after units [k0, k1) of panels [p, p + P)
// takes (chunks of `chunk` units): the next units, or past the last one, the first
// units of the next panels.
template <int P>
inline void next_chunk(const MatmulCall& c, int64_t p, int64_t k1, int64_t units, int64_t chunk, TileArgs* a) {
  const PackedWeights& w = *c.w;
  const int64_t unit_bytes = w.panel_bytes / units;
  if (k1 < units) {
    a->pf_panel = p;
    a->pf = k1 * unit_bytes;
    a->pf_bytes = (std::min(units, k1 + chunk) - k1) * unit_bytes;
  } else {
    a->pf_panel = p + P;
    a->pf = 0;
    a->pf_bytes = std::min(units, chunk) * unit_bytes;
  }
}

// GEMM over panels [p, p + P): the batch in passes of kBatchTokens tokens, each pass
// over the chunks of the panels with every token's tiles per chunk.
template <class Kind, int P>
void gemm_panels(const MatmulCall& c, int64_t p) {
  constexpr int T = Kind::kTokens;
  const int64_t units = Kind::units(*c.w), rows = c.w->rows, chunk = chunk_units<Kind>(units);
  VF acc[P * kBatchTokens];
  for (int64_t s0 = 0; s0 < c.n; s0 += kBatchTokens) {
    const int64_t ns = std::min<int64_t>(kBatchTokens, c.n - s0);
    for (int64_t k0 = 0; k0 < units; k0 += chunk) {
      const int64_t k1 = std::min(units, k0 + chunk);
      // The next chunk's weights, in equal slices over this chunk's tiles.
      TileArgs a{p, s0, T, acc, kBatchTokens, 0, 0, 0, k0 == 0, k1 == units ? c.y : nullptr, rows};
      next_chunk<P>(c, p, k1, units, chunk, &a);
      const int64_t tiles = (ns + T - 1) / T, pf_total = a.pf_bytes, pf_start = a.pf;
      const int64_t pf_tiles = std::min<int64_t>(tiles, kPrefetchTiles);
      for (int64_t i = 0; i < tiles; ++i, a.t0 += T, a.acc += T) {
        const int64_t from = pf_total * std::min(i, pf_tiles) / pf_tiles;
        a.pf = pf_start + from;
        a.pf_bytes = pf_total * std::min(i + 1, pf_tiles) / pf_tiles - from;  // 0 past the first pf_tiles
        a.valid = std::min<int64_t>(T, s0 + ns - a.t0);
        if (a.valid == T) {
          Kind::template tile<P, T>(c, a, k0, k1);
        } else {
          token_tail<Kind, P, 1>(c, a, k0, k1);
        }
      }
    }
  }
}

// GEMV over panels [p, end): tiles of P panels, then of P / 2, ... for the rest.
template <class Kind, int P>
inline void gemv_panels(const MatmulCall& c, int64_t p, int64_t end) {
  const int64_t units = Kind::units(*c.w);
  for (; p + P <= end; p += P) {
    VF acc[P];
    for (int i = 0; i < P; ++i) acc[i] = zero_f();
    Kind::template tile<P, 1>(c, TileArgs{p, 0, 1, acc, 1, 0, 0, 0}, 0, units);
    for (int i = 0; i < P; ++i) store_rows(c.y, p + i, c.w->rows, acc[i]);
  }
  if constexpr (P > 1) gemv_panels<Kind, P / 2>(c, p, end);
}

template <class Kind>
void run_tiles(const MatmulCall& c) {
  int64_t p = c.panel_begin;
  if (c.n == 1) {
    gemv_panels<Kind, Kind::kGemv>(c, p, c.panel_end);
    return;
  }
  for (; p + Kind::kPanels <= c.panel_end; p += Kind::kPanels) gemm_panels<Kind, Kind::kPanels>(c, p);
  for (; p < c.panel_end; ++p) gemm_panels<Kind, 1>(c, p);
}

// Token t's part of block 0 of QuantizedActivations for blocks of `block` values;
// block b's part is `b * a.n` blocks further on in each array.
struct TokenQ {
  const int8_t* q;
  const float* d;
  const int32_t* corr;
  const float* s;
  const int32_t* pairs;
};
LLMS_SIMD TokenQ token_q(const QuantizedActivations& a, int64_t t, int64_t block) {
  const int64_t corr_per_block = block == 32 ? 1 : 16;
  return {a.q + t * block, a.d + t, a.corr + t * corr_per_block, a.s ? a.s + t : nullptr,
          a.pairs ? a.pairs + t * 4 : nullptr};
}

// The quantized activations of a tile's T tokens (blocks of `block` values).
template <int T>
LLMS_SIMD void tile_tokens(const QuantizedActivations& a, const TileArgs& args, int64_t block, TokenQ (&x)[T]) {
  for (int t = 0; t < T; ++t) x[t] = token_q(a, token_of(args, t), block);
}

// Where a tile's P panels start and how far apart their block pairs are.
template <int P>
LLMS_SIMD void tile_panels(const PackedWeights& w, const TileArgs& args, const uint8_t* (&panel)[P],
                           int64_t (&stride)[P]) {
  for (int p = 0; p < P; ++p) panel[p] = w.panel(args.p0 + p), stride[p] = w.stride(args.p0 + p);
}

// What the two k-quant kinds (Q4_K, Q6_K) share: one panel per GEMM tile, tiles of
// kKGemmTokens tokens, 256-value super-blocks as the units of a row.
struct KQuantKind {
  static constexpr int kGemv = kGemvPanels;
  static constexpr int kPanels = 1;
  static constexpr int kTokens = kKGemmTokens;
  static constexpr int64_t kChunk = kKGemmChunk;
  static int64_t units(const PackedWeights& w) { return w.cols / 256; }
};
