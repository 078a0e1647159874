#include "engine/model_runner.h"

namespace llms {

LocalModelRunner::LocalModelRunner(const Model& model, const KvCacheConfig& kv_config, int threads, int context_length)
    : model_(model), kv_(kv_config), pool_(threads) {
  state_.set_context_length(context_length);
}

}  // namespace llms
