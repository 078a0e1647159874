// The LoRA adapters a server serves (model/lora.h): LoraCatalog, the server's list of
// names and paths (from --lora, and loaded or unloaded at run time), and LoraSet, one
// served model's adapters, each loaded from its path and bound to that model's
// weights. A request names an adapter as its model (`"model": "NAME"`); the version
// it runs on hands it the adapter by pointer, shared, so that an adapter unloaded
// while a request runs stays alive until that request ends.
//
// Thread-safety: both classes are safe to call from any thread (a mutex each).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/lora.h"

namespace llms {

class Model;

struct LoraSpec {
  std::string name;  // what a request's `model` says
  std::string path;  // a GGUF adapter or a PEFT directory
};

// `specs`: NAME=PATH entries, one per line (the `lora` config key, each --lora flag a
// line). INVALID_ARGUMENT naming the entry for a line without '=', an empty name or
// path, a name twice, or the base model's own name.
Result<std::vector<LoraSpec>> parse_lora_specs(std::string_view specs, std::string_view base_name);
// The rule for one adapter name next to the base model's (also for run-time loads):
// not empty, at most 128 letters, digits and . _ - : / @ +, not the base's name.
Status check_lora_name(std::string_view name, std::string_view base_name);

class LoraCatalog {
 public:
  explicit LoraCatalog(std::vector<LoraSpec> specs = {}) : specs_(std::move(specs)) {}
  std::vector<LoraSpec> list() const;
  std::optional<LoraSpec> find(std::string_view name) const;
  // ALREADY_EXISTS when the name is taken.
  Status add(LoraSpec spec);
  // NOT_FOUND when no adapter has that name.
  Status remove(std::string_view name);

 private:
  mutable std::mutex mu_;
  std::vector<LoraSpec> specs_;
};

// What a loaded adapter is, for listings.
struct LoraInfo {
  std::string name, path;
  int64_t bytes = 0;
  int64_t max_rank = 0;
};

class LoraSet {
 public:
  // `model` outlives the set.
  explicit LoraSet(const Model& model) : model_(model) {}

  // Loads `spec.path` against the model (LoraAdapter::load's errors, with the name);
  // ALREADY_EXISTS when the name is taken.
  Status add(const LoraSpec& spec);
  // NOT_FOUND when no adapter has that name. Requests running with it keep it.
  Status remove(std::string_view name);
  // Null when no adapter has that name.
  std::shared_ptr<const LoraAdapter> find(std::string_view name) const;
  std::vector<LoraInfo> list() const;
  size_t size() const;

 private:
  struct Entry {
    std::string path;
    std::shared_ptr<const LoraAdapter> adapter;
  };
  const Model& model_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> adapters_;
};

}  // namespace llms
