#include "eval/imatrix.h"

#include <fmt/format.h>

#include <algorithm>

namespace llms {
namespace {

class ChannelObserver : public MatmulObserver {
 public:
  explicit ChannelObserver(ImportanceTable& table) : table_(table) {}
  void on_matmul(const std::string& name, const WeightMatrix& w, const float* x, int64_t n) override {
    ChannelSums& s = table_.tensors[name];
    const int64_t cols = w.cols();
    s.sum_sq.resize(static_cast<size_t>(cols), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * cols;
      for (int64_t c = 0; c < cols; ++c) s.sum_sq[c] += static_cast<double>(xt[c]) * xt[c];
    }
    s.count += n;
  }

 private:
  ImportanceTable& table_;
};

}  // namespace

Result<ImportanceTable> collect_importance(const Model& model, std::span<const int32_t> tokens,
                                           const ImatrixOptions& o, ThreadPool& pool) {
  if (o.ctx < 2) return invalid_argument("--ctx must be at least 2");
  if (static_cast<int64_t>(tokens.size()) < o.ctx) {
    return invalid_argument(fmt::format("the text has {} tokens, fewer than one window of {}", tokens.size(), o.ctx));
  }
  ImportanceTable table;
  ChannelObserver observer(table);
  KvCache kv(model.kv_config((o.ctx + 15) / 16, 16, DType::kF32, DType::kF32));
  std::vector<int32_t> block_table;
  for (int32_t b = 0; b < kv.num_blocks(); ++b) block_table.push_back(b);
  ForwardState state;
  state.set_observer(&observer);
  ForwardOutput out;
  const int64_t windows = static_cast<int64_t>(tokens.size()) / o.ctx;
  const int64_t used = o.max_windows > 0 ? std::min<int64_t>(windows, o.max_windows) : windows;
  for (int64_t w = 0; w < used; ++w) {
    SequenceChunk c{tokens.subspan(static_cast<size_t>(w * o.ctx), static_cast<size_t>(o.ctx)), 0, block_table,
                    LogitsWanted::kAll};  // the head sees every token
    LLMS_RETURN_IF_ERROR(model.forward({&c, 1}, kv, state, pool, out));
  }
  table.chunks = used;
  return table;
}

}  // namespace llms
