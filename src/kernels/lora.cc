// Front end of lora.h: the tasks cut into tiles of kLoraTile tokens, the tiles split
// across the pool, each run by the active target's lora_tile; and the reference.
#include "kernels/lora.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernel_table.h"
#include "quant/half.h"

namespace llms {
namespace {

// Below this many multiply-adds the tiles run on the calling thread (matmul.cc's rule).
constexpr int64_t kMinParallelMacs = 1 << 16;

struct Tile {
  int32_t task;
  int32_t first;  // the tile's first token within the task
};

}  // namespace

float LoraFactors::a(int64_t c, int64_t j) const {
  const int64_t i = c * rank_stride + j;
  return at_f16 != nullptr ? f16_to_f32(at_f16[i]) : at[i];
}

float LoraFactors::b(int64_t j, int64_t o) const {
  const int64_t i = j * rows + o;
  return bt_f16 != nullptr ? f16_to_f32(bt_f16[i]) : bt[i];
}

void lora_add(std::span<const LoraTask> tasks, const float* x, ThreadPool& pool) {
  // The caller's list: workers read it through this reference (a thread_local named
  // inside the lambda would be each worker's own).
  thread_local std::vector<Tile> own_tiles;
  std::vector<Tile>& tiles = own_tiles;
  tiles.clear();
  int64_t macs = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const LoraTask& t = tasks[i];
    const int64_t n = static_cast<int64_t>(t.tokens.size());
    for (int64_t first = 0; first < n; first += kLoraTile) {
      tiles.push_back({static_cast<int32_t>(i), static_cast<int32_t>(first)});
    }
    macs += n * t.f->rank * (t.f->cols + t.f->rows);
  }
  if (tiles.empty()) return;
  const KernelTable& k = active_kernels();
  const int64_t count = static_cast<int64_t>(tiles.size());
  pool.parallel_for(count, 1, macs < kMinParallelMacs ? count + 1 : 2, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Tile tile = tiles[static_cast<size_t>(i)];
      const LoraTask& t = tasks[static_cast<size_t>(tile.task)];
      const int n = static_cast<int>(std::min<int64_t>(kLoraTile, static_cast<int64_t>(t.tokens.size()) - tile.first));
      k.lora_tile(*t.f, x, t.tokens.data() + tile.first, n, t.y);
    }
  });
}

void lora_reference(const LoraTask& task, const float* x) {
  const LoraFactors& f = *task.f;
  std::vector<float> h(static_cast<size_t>(f.rank));
  for (const int32_t t : task.tokens) {
    const float* xt = x + static_cast<int64_t>(t) * f.cols;
    for (int64_t j = 0; j < f.rank; ++j) {
      float acc = 0.0f;
      for (int64_t c = 0; c < f.cols; ++c) acc = std::fma(f.a(c, j), xt[c], acc);
      h[static_cast<size_t>(j)] = acc;
    }
    float* yt = task.y + static_cast<int64_t>(t) * f.rows;
    for (int64_t o = 0; o < f.rows; ++o) {
      float acc = 0.0f;
      for (int64_t j = 0; j < f.rank; ++j) acc = std::fma(f.b(j, o), h[static_cast<size_t>(j)], acc);
      yt[o] = yt[o] + acc * f.scale;
    }
  }
}

}  // namespace llms
