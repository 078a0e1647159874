// GgufFile: a parsed, fully validated GGUF (v2 or v3) file, memory-mapped.
//
// Every count, length, offset, dimension and type id is checked against the file size
// before it is used, so a truncated, corrupted or hostile file yields a Status naming
// what is wrong and where (byte offset, key or tensor name), never a crash, a hang or
// an allocation larger than a small multiple of the file. Tensor data is not copied:
// TensorInfo::view() points into the mapping, which lives as long as the GgufFile.
// open() keeps no page of the header resident once it is parsed (the metadata are
// copies), and a loader that has copied a tensor out (repacked it) releases its pages
// with release_pages(): weights are then resident once, and mapped pages stay
// resident only for tensors read in place.
//
// Thread-safety: immutable after open(); safe to read from any thread (release_pages()
// too: the bytes read the same before and after).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "io/gguf_value.h"
#include "tensor/tensor.h"

namespace llms {

struct GgufTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  int n_dims = 0;
  std::array<int64_t, 4> ne = {1, 1, 1, 1};
  uint64_t offset = 0;     // from the start of the data section
  uint64_t num_bytes = 0;
  const uint8_t* data = nullptr;

  Tensor view() const;
  int64_t num_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

// Limits that keep a hostile file from costing more than a small multiple of its size.
struct GgufLimits {
  uint64_t max_tensors = 1 << 20;
  uint64_t max_metadata_values = 8 << 20;  // all array elements together
  int max_array_depth = 8;
  uint64_t max_key_bytes = 65535;
  uint64_t max_tensor_name_bytes = 1024;
};

class GgufFile {
 public:
  static constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
  static constexpr uint32_t kDefaultAlignment = 32;

  // Maps and parses the file at `path`; the error message starts with the path.
  static Result<GgufFile> open(const std::string& path, const GgufLimits& limits = {});
  // Parses bytes owned by the caller, which must outlive the result (tests, fuzzing).
  static Result<GgufFile> parse(std::span<const uint8_t> bytes, const GgufLimits& limits = {});

  GgufFile(GgufFile&&) = default;
  GgufFile& operator=(GgufFile&&) = default;

  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_.size(); }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& path() const { return path_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, gguf::Value>>& metadata() const { return metadata_; }
  const gguf::Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: NOT_FOUND when absent, INVALID_ARGUMENT naming the key when the type
  // does not fit (integers of any width convert when the value fits).
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;  // integers convert too
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;
  Result<std::vector<int32_t>> get_i32_array(std::string_view key) const;
  // Same, with a default when the key is absent (a wrong type is still an error).
  Result<uint64_t> get_uint_or(std::string_view key, uint64_t fallback) const;
  Result<double> get_float_or(std::string_view key, double fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;
  Result<std::string> get_string_or(std::string_view key, std::string fallback) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Drops the tensor's pages from the process's resident memory (a later read maps
  // them again). Does nothing for a GgufFile made by parse(): its bytes belong to the
  // caller and may not be file pages.
  void release_pages(const GgufTensorInfo& t) const;
  // The same for the whole file: reading one tensor may map its neighbours' pages too
  // (the kernel maps whole large folios and a window around a fault), so a loader
  // ends with this.
  void release_all_pages() const;
  // Bytes of the file mapping resident in this process (0 for parse(), -1 unknown).
  int64_t resident_bytes() const { return mapping_ ? mapping_->resident_bytes() : 0; }

 private:
  GgufFile() = default;
  friend class GgufParser;

  std::unique_ptr<MappedFile> mapping_;  // null when parse() borrowed the bytes
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, gguf::Value>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};


}  // namespace llms
