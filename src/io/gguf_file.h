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
// A GgufFile may also be assembled from another format (GgufFile::assemble(): a Hugging
// Face directory, io/hf_checkpoint.h) so that the rest of llmserve reads one kind of
// model. Its tensors are read in place from that format's mapped files where the bytes
// are already GGUF's, or computed on request (derived: data == nullptr) where they are
// not (rows permuted, transposed, experts stacked): read() gives every tensor's bytes
// either way, and a derived tensor's copy lives only as long as the TensorData.
//
// Thread-safety: immutable after open(); safe to read from any thread (release_pages()
// and read() too: the bytes read the same before and after).
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
  // Null for a derived tensor of an assembled file: GgufFile::read() computes it.
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

// The bytes behind an assembled file's tensors: the source format's mapped files, and
// how to compute each derived tensor from them.
class GgufTensorSource {
 public:
  virtual ~GgufTensorSource() = default;
  // Writes the derived tensor `t` (t.data == nullptr) into `out` (t.num_bytes).
  virtual void derive(const GgufTensorInfo& t, std::span<uint8_t> out) const = 0;
  // For a derived tensor that is the source's rows in another order (a row permutation
  // and nothing else): those bytes, populated, with `order` set to the source row of
  // each of t's rows. Null for a tensor computed otherwise.
  virtual const uint8_t* reordered_rows(const GgufTensorInfo& /*t*/, std::vector<int64_t>* /*order*/) const {
    return nullptr;
  }
  // Releases the pages of the source bytes a derived tensor is made from.
  virtual void release_sources(const GgufTensorInfo& /*t*/) const {}
  // As GgufFile::release_pages() and release_all_pages(), for bytes read in place.
  virtual void release(const uint8_t* data, uint64_t num_bytes) const = 0;
  virtual void release_all() const = 0;
  virtual int64_t resident_bytes() const = 0;
};

// One tensor's bytes to read: a view into the file, or a derived tensor's copy that
// this object owns. The copy is a mapping of its own rather than heap memory, so that
// freeing it gives its pages back to the system whatever was allocated meanwhile (a
// loader repacks each copy into panels and drops it: on the heap, the holes would stay
// resident).
class TensorData {
 public:
  const Tensor& view() const { return view_; }
  const uint8_t* data() const { return static_cast<const uint8_t*>(view_.data); }
  // True when the bytes are a copy (freed with this object), not the file's.
  bool owned() const { return owned_ != nullptr; }

 private:
  friend class GgufFile;
  struct Unmap {
    size_t bytes;
    void operator()(uint8_t* p) const;
  };
  Tensor view_;
  std::unique_ptr<uint8_t, Unmap> owned_;
};

class GgufFile {
 public:
  static constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
  static constexpr uint32_t kDefaultAlignment = 32;

  // Maps and parses the file at `path`; the error message starts with the path.
  static Result<GgufFile> open(const std::string& path, const GgufLimits& limits = {});
  // Parses bytes owned by the caller, which must outlive the result (tests, fuzzing).
  static Result<GgufFile> parse(std::span<const uint8_t> bytes, const GgufLimits& limits = {});
  // A file made from another format's tensors: `tensors` point into what `source`
  // owns, or are derived (data == nullptr). `path` names the origin (a directory);
  // `size` is the bytes it holds. INVALID_ARGUMENT for duplicate keys or tensor names.
  static Result<GgufFile> assemble(std::string path, uint64_t size,
                                   std::vector<std::pair<std::string, gguf::Value>> metadata,
                                   std::vector<GgufTensorInfo> tensors, std::unique_ptr<GgufTensorSource> source);

  GgufFile(GgufFile&&) = default;
  GgufFile& operator=(GgufFile&&) = default;

  uint32_t version() const { return version_; }
  uint64_t file_size() const { return size_; }
  bool assembled() const { return source_ != nullptr; }
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
  // The tensor's bytes: in place, or computed for a derived one.
  TensorData read(const GgufTensorInfo& t) const;
  // The same with no copy for a derived tensor that is the source's rows in another
  // order: the source's bytes, with `order` set to the row of them holding each of
  // t's rows (a packer reads them in that order). `order` is left empty when the bytes
  // are in t's order, as read() gives them.
  TensorData read_rows(const GgufTensorInfo& t, std::vector<int64_t>* order) const;
  // The tensor's bytes copied (or computed) into `out`, t.num_bytes long: the writer's
  // way, with no copy in between.
  void read_into(const GgufTensorInfo& t, std::span<uint8_t> out) const;

  // Drops the tensor's pages (a derived tensor's: its source's) from the process's
  // resident memory (a later read maps them again). Does nothing for a GgufFile made by parse(): its bytes belong to the
  // caller and may not be file pages.
  void release_pages(const GgufTensorInfo& t) const;
  // The same for the whole file: reading one tensor may map its neighbours' pages too
  // (the kernel maps whole large folios and a window around a fault), so a loader
  // ends with this.
  void release_all_pages() const;
  // Bytes of the file mapping resident in this process (0 for parse(), -1 unknown).
  int64_t resident_bytes() const {
    return source_ ? source_->resident_bytes() : mapping_ ? mapping_->resident_bytes() : 0;
  }

 private:
  GgufFile() = default;
  friend class GgufParser;

  std::unique_ptr<MappedFile> mapping_;  // null when parse() borrowed the bytes
  std::unique_ptr<GgufTensorSource> source_;  // an assembled file's bytes; else null
  std::span<const uint8_t> bytes_;
  uint64_t size_ = 0;
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
