// SafetensorsFile: one parsed, fully validated safetensors file (Hugging Face's weight
// format), memory-mapped.
//
// The format: an 8-byte little-endian header length N, N bytes of JSON (an object of
// tensor name -> {"dtype", "shape", "data_offsets": [begin, end]}, plus an optional
// "__metadata__" object of strings), then the data section the offsets count from.
// Validation is as strict as the reference implementation's and as GgufFile's: N
// within the file and the limit, the JSON an object with no duplicate key at any
// level, each entry exactly those three fields, a known dtype, a shape whose element
// count times the dtype's size is exactly end - begin, tensors that tile the data
// section from 0 to its end with no gap and no overlap, and each tensor's bytes
// aligned to its element size in the file (so that they are read in place). Errors
// name the tensor and the byte offsets; a truncated or hostile file is a Status,
// never a crash or an allocation larger than a small multiple of the header.
//
// Thread-safety: immutable after open(); safe to read from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace llms {

struct SafetensorsLimits {
  uint64_t max_header_bytes = 100'000'000;  // the reference implementation's limit
  uint64_t max_tensors = 1 << 20;
  int max_rank = 8;
};

struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;       // as the file spells it: "F32", "BF16", "I64", ...
  std::optional<DType> dtype;   // F32, F16 or BF16 (the weight types); nullopt for the others
  int64_t element_size = 0;     // bytes per element of dtype_name
  std::vector<int64_t> shape;   // outermost dimension first (PyTorch's order)
  uint64_t offset = 0;          // from the start of the data section
  uint64_t num_bytes = 0;
  const uint8_t* data = nullptr;

  int64_t num_elements() const;
  // "[2048, 128]", outermost first.
  std::string shape_string() const;
};

class SafetensorsFile {
 public:
  // Maps and parses the file at `path`; the error message starts with the path.
  static Result<SafetensorsFile> open(const std::string& path, const SafetensorsLimits& limits = {});
  // Parses bytes owned by the caller, which must outlive the result (tests, fuzzing).
  static Result<SafetensorsFile> parse(std::span<const uint8_t> bytes, const SafetensorsLimits& limits = {});

  SafetensorsFile(SafetensorsFile&&) = default;
  SafetensorsFile& operator=(SafetensorsFile&&) = default;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return bytes_.size(); }
  uint64_t data_offset() const { return data_offset_; }
  // In file order (by offset).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The mapping (null for parse()): for releasing pages and counting resident bytes.
  const MappedFile* mapping() const { return mapping_.get(); }

 private:
  SafetensorsFile() = default;
  friend class SafetensorsParser;

  std::unique_ptr<MappedFile> mapping_;
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// One tensor to write: `fill` writes its num_bytes at write time (so models larger
// than memory stream to disk).
struct SafetensorsOutput {
  std::string name;
  DType dtype = DType::kF32;      // F32, F16 or BF16
  std::vector<int64_t> shape;     // outermost first
  std::function<void(std::span<uint8_t> out)> fill;
  uint64_t num_bytes() const;
};
// Writes a safetensors file atomically (temporary file, then rename): the header
// padded to 8 bytes, tensors by element size then name, so each is aligned.
Status write_safetensors(const std::string& path, std::vector<SafetensorsOutput> tensors,
                         const std::map<std::string, std::string>& metadata = {});

// The bytes of one element of a safetensors dtype name ("F32" -> 4), 0 if unknown.
int64_t safetensors_element_size(std::string_view dtype_name);
// The safetensors name of a type the weights may have (F32, F16, BF16); empty otherwise.
std::string_view safetensors_dtype_name(DType type);

}  // namespace llms
