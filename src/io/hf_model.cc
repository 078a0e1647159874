#include "io/hf_model.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "io/gguf_writer.h"
#include "io/hf_mapping.h"

namespace llms {

Result<GgufFile> open_hf_model(const std::string& dir) {
  LLMS_ASSIGN_OR_RETURN(HfCheckpoint ckpt, HfCheckpoint::open(dir));
  std::string name = std::filesystem::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = std::filesystem::path(dir).lexically_normal().parent_path().filename().string();
  GgufMetadata md;
  auto plan = hf_config_to_gguf(ckpt.config(), name, md);
  if (!plan.ok()) return plan.status().with_context(dir);
  const uint64_t size = ckpt.total_file_bytes();
  auto tensors = hf_tensors_to_gguf(std::move(ckpt), *plan);
  if (!tensors.ok()) return tensors.status().with_context(dir);
  // general.file_type: the type that holds the most matrix weights, as converters say.
  std::map<DType, int64_t> held;
  for (const auto& t : tensors->tensors) {
    if (t.n_dims >= 2) held[t.dtype] += t.num_elements();
  }
  DType most = DType::kF32;
  for (const auto& [type, n] : held) {
    if (n > held[most]) most = type;
  }
  md.emplace_back("general.file_type", gguf::Value::u32(gguf_file_type(most)));
  auto file = GgufFile::assemble(dir, size, std::move(md), std::move(tensors->tensors), std::move(tensors->source));
  if (!file.ok()) return file.status().with_context(dir);
  return file;
}

Result<GgufFile> open_model_file(const std::string& path) {
  if (is_model_directory(path)) return open_hf_model(path);
  return GgufFile::open(path);
}

}  // namespace llms
