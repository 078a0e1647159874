// HfCheckpoint: the weights and config.json of a Hugging Face model directory, every
// safetensors shard mapped and validated (io/safetensors.h).
//
// A directory holds either model.safetensors, or shards listed by
// model.safetensors.index.json, whose weight_map must agree with the shards exactly
// (every listed tensor in the shard the index names, every shard tensor listed, the
// index's total_size equal to the tensors' bytes). What people have instead gets an
// error that says what to do: PyTorch pickles (pytorch_model.bin: never unpickled, as
// loading one can run code), a LoRA adapter (adapter_config.json), shards without
// their index, a directory without config.json.
//
// Thread-safety: immutable after open(); safe to read from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "io/safetensors.h"

namespace llms {

class HfCheckpoint {
 public:
  static Result<HfCheckpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  // Every tensor of every shard, shard by shard in file order.
  const std::vector<const SafetensorsTensor*>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  // The shards' bytes together.
  uint64_t total_file_bytes() const;

 private:
  std::string dir_;
  nlohmann::json config_;
  std::vector<SafetensorsFile> shards_;
  std::vector<const SafetensorsTensor*> tensors_;
  std::unordered_map<std::string, const SafetensorsTensor*> index_;
};

// True when `path` is a directory (a model directory, as opposed to a GGUF file).
bool is_model_directory(const std::string& path);

// Reads a small JSON file of a model directory; `what` names it in errors.
Result<nlohmann::json> read_json_file(const std::string& path);

}  // namespace llms
