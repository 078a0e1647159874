#include "engine/model_runner.h"

namespace llms {

LocalModelRunner::LocalModelRunner(const Model& model, const KvCacheConfig& kv_config, int threads)
    : model_(model), kv_(kv_config), pool_(threads) {}

}  // namespace llms
