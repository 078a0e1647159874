#include "io/hf_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>

#include "base/mapped_file.h"

namespace llms {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// The files of `dir` whose names end with `suffix`, sorted.
std::vector<std::string> files_ending(const std::string& dir, std::string_view suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The error for a directory with no safetensors weights, naming what it has instead.
Status no_weights_error(const std::string& dir) {
  std::vector<std::string> pickles = files_ending(dir, ".bin");
  for (const char* ext : {".pt", ".pth", ".ckpt"}) {
    for (auto& f : files_ending(dir, ext)) pickles.push_back(f);
  }
  if (!pickles.empty()) {
    return unimplemented(fmt::format(
        "{}: the weights are PyTorch pickles ({}), which llmserve does not load: unpickling can run arbitrary code. "
        "Convert them to safetensors first, e.g. python3 -c \"from transformers import AutoModelForCausalLM as M; "
        "M.from_pretrained('{}').save_pretrained('OUT', safe_serialization=True)\" (and copy the tokenizer files), "
        "then serve OUT",
        dir, pickles.front(), dir));
  }
  const auto shards = files_ending(dir, ".safetensors");
  if (!shards.empty()) {
    return not_found(fmt::format("{}: {} is there but neither model.safetensors nor model.safetensors.index.json "
                                 "(shards are read through their index)", dir, shards.front()));
  }
  return not_found(fmt::format("{}: no weights (model.safetensors or model.safetensors.index.json)", dir));
}

Status adapter_error(const std::string& dir) {
  std::string base;
  if (auto cfg = read_json_file((fs::path(dir) / "adapter_config.json").string()); cfg.ok()) {
    const json& j = *cfg;
    if (j.is_object() && j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_string()) {
      base = fmt::format(" of '{}'", j["base_model_name_or_path"].get<std::string>());
    }
  }
  return unimplemented(fmt::format(
      "{} is a LoRA adapter{} (adapter_config.json), not a model: llmserve serves whole models. Merge the adapter "
      "into its base model (PEFT: PeftModel.from_pretrained(base, '{}').merge_and_unload().save_pretrained(OUT, "
      "safe_serialization=True), with the base's tokenizer files) and serve the merged directory",
      dir, base, dir));
}

// A shard's file name from the index: a plain name inside the directory.
Status check_shard_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name == "." ||
      name == "..") {
    return data_loss(fmt::format("model.safetensors.index.json names shard '{}': shards must be files of the "
                                 "directory itself", name));
  }
  return ok_status();
}

}  // namespace

bool is_model_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

Result<json> read_json_file(const std::string& path) {
  LLMS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return invalid_argument(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
}

Result<HfCheckpoint> HfCheckpoint::open(const std::string& dir) {
  const fs::path d(dir);
  if (!file_exists(d / "config.json")) {
    if (file_exists(d / "adapter_config.json")) return adapter_error(dir);
    return not_found(fmt::format("{}: no config.json, so not a Hugging Face model directory (llmserve serves a GGUF "
                                 "file or a directory with config.json and safetensors weights)", dir));
  }
  HfCheckpoint c;
  c.dir_ = dir;
  LLMS_ASSIGN_OR_RETURN(c.config_, read_json_file((d / "config.json").string()));
  if (!c.config_.is_object()) return invalid_argument(fmt::format("{}/config.json is not a JSON object", dir));
  std::map<std::string, std::string> listed;  // tensor -> shard, from the index
  uint64_t total_size = 0;
  bool has_total = false;
  std::vector<std::string> shard_names;
  if (file_exists(d / "model.safetensors")) {
    shard_names.push_back("model.safetensors");
  } else if (file_exists(d / "model.safetensors.index.json")) {
    const std::string index_path = (d / "model.safetensors.index.json").string();
    LLMS_ASSIGN_OR_RETURN(json index, read_json_file(index_path));
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      return data_loss(fmt::format("{}: no weight_map object", index_path));
    }
    std::set<std::string> names;
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) return data_loss(fmt::format("{}: weight_map['{}'] is not a file name", index_path, tensor));
      LLMS_RETURN_IF_ERROR(check_shard_name(shard.get<std::string>()));
      listed[tensor] = shard.get<std::string>();
      if (names.insert(shard.get<std::string>()).second) shard_names.push_back(shard.get<std::string>());
    }
    if (index.contains("metadata") && index["metadata"].is_object() && index["metadata"].contains("total_size")) {
      const json& ts = index["metadata"]["total_size"];
      if (!ts.is_number_unsigned()) return data_loss(fmt::format("{}: metadata.total_size is not a byte count", index_path));
      total_size = ts.get<uint64_t>();
      has_total = true;
    }
    if (shard_names.empty()) return data_loss(fmt::format("{}: weight_map is empty", index_path));
  } else {
    if (file_exists(d / "adapter_config.json")) return adapter_error(dir);
    return no_weights_error(dir);
  }
  c.shards_.reserve(shard_names.size());
  for (const auto& name : shard_names) {
    const fs::path p = d / name;
    if (!file_exists(p)) return not_found(fmt::format("{}: shard {} is missing (model.safetensors.index.json lists it)", dir, name));
    LLMS_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(p.string()));
    c.shards_.push_back(std::move(f));
  }
  uint64_t tensor_bytes = 0;
  for (size_t s = 0; s < c.shards_.size(); ++s) {
    for (const auto& t : c.shards_[s].tensors()) {
      if (!listed.empty()) {
        const auto it = listed.find(t.name);
        if (it == listed.end() || it->second != shard_names[s]) {
          return data_loss(fmt::format("{}: shard {} holds tensor '{}', which model.safetensors.index.json {}", dir,
                                       shard_names[s], t.name,
                                       it == listed.end() ? "does not list" : "places in " + it->second));
        }
      }
      if (!c.index_.emplace(t.name, &t).second) {
        return data_loss(fmt::format("{}: tensor '{}' is in two shards", dir, t.name));
      }
      c.tensors_.push_back(&t);
      tensor_bytes += t.num_bytes;
    }
  }
  for (const auto& [tensor, shard] : listed) {
    if (c.index_.count(tensor) == 0) {
      return data_loss(fmt::format("{}: model.safetensors.index.json places tensor '{}' in {}, which does not hold it "
                                   "(a shard from another version of the model?)", dir, tensor, shard));
    }
  }
  if (has_total && total_size != tensor_bytes) {
    return data_loss(fmt::format("{}: the shards hold {} bytes of tensors but model.safetensors.index.json says "
                                 "total_size {} (mismatched shards: from another download or version?)",
                                 dir, tensor_bytes, total_size));
  }
  return c;
}

const SafetensorsTensor* HfCheckpoint::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : it->second;
}

uint64_t HfCheckpoint::total_file_bytes() const {
  uint64_t n = 0;
  for (const auto& s : shards_) n += s.file_size();
  return n;
}

}  // namespace llms
