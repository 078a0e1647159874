#include "io/gguf_file.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include "base/check.h"
#include "base/utf8.h"

namespace llms {

using gguf::Array;
using gguf::Value;
using gguf::ValueType;

Tensor GgufTensorInfo::view() const {
  Tensor t;
  t.dtype = dtype;
  t.n_dims = n_dims;
  t.ne = ne;
  t.data = data;
  return t;
}

// Reads the file front to back. Every read is bounds-checked; errors name the byte
// offset and, once known, the key or tensor being read.
class GgufParser {
 public:
  GgufParser(std::span<const uint8_t> bytes, const GgufLimits& limits) : b_(bytes), limits_(limits) {}

  Status parse(GgufFile& f);

 private:
  uint64_t remaining() const { return b_.size() - pos_; }

  Status need(uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      return data_loss(fmt::format("truncated at offset {}: {} needs {} bytes but only {} remain", pos_, what, n,
                                   remaining()));
    }
    return ok_status();
  }

  template <typename T>
  Result<T> read_pod(std::string_view what) {
    LLMS_RETURN_IF_ERROR(need(sizeof(T), what));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  Result<std::string> read_string(std::string_view what, uint64_t max_len) {
    const uint64_t at = pos_;
    LLMS_ASSIGN_OR_RETURN(uint64_t len, read_pod<uint64_t>(what));
    if (len > remaining()) {
      return data_loss(fmt::format("{} at offset {} claims {} bytes but only {} remain in the file", what, at, len,
                                   remaining()));
    }
    if (len > max_len) return data_loss(fmt::format("{} at offset {} is {} bytes (limit {})", what, at, len, max_len));
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), len);
    pos_ += len;
    return s;
  }

  Result<Value> read_value(ValueType type, const std::string& key, int depth);
  Result<Value> read_array(const std::string& key, int depth);
  Status parse_tensor_infos(GgufFile& f, uint64_t count);
  Status place_tensors(GgufFile& f);

  std::span<const uint8_t> b_;
  GgufLimits limits_;
  uint64_t pos_ = 0;
  uint64_t values_read_ = 0;
};

Result<Value> GgufParser::read_array(const std::string& key, int depth) {
  const uint64_t at = pos_;
  if (depth >= limits_.max_array_depth) {
    return data_loss(fmt::format("key '{}': arrays nested deeper than {} at offset {}", key, limits_.max_array_depth, at));
  }
  LLMS_ASSIGN_OR_RETURN(uint32_t elem_id, read_pod<uint32_t>("array element type"));
  if (!gguf::value_type_valid(elem_id)) {
    return data_loss(fmt::format("key '{}': unknown array element type {} at offset {}", key, elem_id, at));
  }
  const auto elem = static_cast<ValueType>(elem_id);
  LLMS_ASSIGN_OR_RETURN(uint64_t count, read_pod<uint64_t>("array length"));
  // Smallest possible encoding of one element: its scalar size, a string's length
  // prefix, or a nested array's header.
  const uint64_t min_elem = elem == ValueType::kString ? 8 : elem == ValueType::kArray ? 12 : gguf::scalar_size(elem);
  if (count > remaining() / min_elem) {
    return data_loss(fmt::format("key '{}': array of {} {} elements at offset {} cannot fit in the {} bytes left", key,
                                 count, gguf::value_type_name(elem), at, remaining()));
  }
  values_read_ += count;
  if (values_read_ > limits_.max_metadata_values) {
    return data_loss(fmt::format("key '{}': metadata holds more than {} values in all", key, limits_.max_metadata_values));
  }
  std::vector<Value> items;
  items.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    LLMS_ASSIGN_OR_RETURN(Value v, read_value(elem, key, depth + 1));
    items.push_back(std::move(v));
  }
  return Value::array(elem, std::move(items));
}

Result<Value> GgufParser::read_value(ValueType type, const std::string& key, int depth) {
  auto ctx = [&](const Status& s) { return s.with_context(fmt::format("key '{}'", key)); };
  switch (type) {
    case ValueType::kUint8: { auto r = read_pod<uint8_t>("u8 value"); if (!r.ok()) return ctx(r.status()); return Value::u8(*r); }
    case ValueType::kInt8: { auto r = read_pod<int8_t>("i8 value"); if (!r.ok()) return ctx(r.status()); return Value::i8(*r); }
    case ValueType::kUint16: { auto r = read_pod<uint16_t>("u16 value"); if (!r.ok()) return ctx(r.status()); return Value::u16(*r); }
    case ValueType::kInt16: { auto r = read_pod<int16_t>("i16 value"); if (!r.ok()) return ctx(r.status()); return Value::i16(*r); }
    case ValueType::kUint32: { auto r = read_pod<uint32_t>("u32 value"); if (!r.ok()) return ctx(r.status()); return Value::u32(*r); }
    case ValueType::kInt32: { auto r = read_pod<int32_t>("i32 value"); if (!r.ok()) return ctx(r.status()); return Value::i32(*r); }
    case ValueType::kUint64: { auto r = read_pod<uint64_t>("u64 value"); if (!r.ok()) return ctx(r.status()); return Value::u64(*r); }
    case ValueType::kInt64: { auto r = read_pod<int64_t>("i64 value"); if (!r.ok()) return ctx(r.status()); return Value::i64(*r); }
    case ValueType::kFloat32: { auto r = read_pod<float>("f32 value"); if (!r.ok()) return ctx(r.status()); return Value::f32(*r); }
    case ValueType::kFloat64: { auto r = read_pod<double>("f64 value"); if (!r.ok()) return ctx(r.status()); return Value::f64(*r); }
    case ValueType::kBool: {
      const uint64_t at = pos_;
      auto r = read_pod<uint8_t>("bool value");
      if (!r.ok()) return ctx(r.status());
      if (*r > 1) return data_loss(fmt::format("key '{}': bool at offset {} has value {}", key, at, *r));
      return Value::boolean(*r != 0);
    }
    case ValueType::kString: {
      auto r = read_string("string value", std::numeric_limits<uint64_t>::max());
      if (!r.ok()) return ctx(r.status());
      return Value::string(std::move(*r));
    }
    case ValueType::kArray:
      return read_array(key, depth);
  }
  return data_loss(fmt::format("key '{}': unknown value type {}", key, static_cast<uint32_t>(type)));
}

Status GgufParser::parse_tensor_infos(GgufFile& f, uint64_t count) {
  f.tensors_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = pos_;
    const std::string which = fmt::format("tensor info #{}", i);
    LLMS_ASSIGN_OR_RETURN(std::string name, read_string(which + " name", limits_.max_tensor_name_bytes));
    if (name.empty() || !is_valid_utf8(name)) {
      return data_loss(fmt::format("{} at offset {}: name is empty or not valid UTF-8", which, at));
    }
    GgufTensorInfo t;
    t.name = std::move(name);
    auto fail = [&](const std::string& what) {
      return data_loss(fmt::format("tensor '{}' (info at offset {}): {}", t.name, at, what));
    };
    LLMS_ASSIGN_OR_RETURN(uint32_t n_dims, read_pod<uint32_t>("tensor dimension count"));
    if (n_dims < 1 || n_dims > 4) return fail(fmt::format("{} dimensions (1 to 4 allowed)", n_dims));
    t.n_dims = static_cast<int>(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      LLMS_ASSIGN_OR_RETURN(uint64_t dim, read_pod<uint64_t>("tensor dimension"));
      if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return fail(fmt::format("dimension {} is {}", d, dim));
      }
      t.ne[d] = static_cast<int64_t>(dim);
    }
    LLMS_ASSIGN_OR_RETURN(uint32_t type_id, read_pod<uint32_t>("tensor type"));
    const auto info = dtype_info(type_id);
    if (!info) return fail(fmt::format("unknown tensor type id {}", type_id));
    t.dtype = info->type;
    LLMS_ASSIGN_OR_RETURN(t.offset, read_pod<uint64_t>("tensor data offset"));
    if (t.ne[0] % info->block_size != 0) {
      return fail(fmt::format("row of {} elements is not a whole number of {} blocks ({} each)", t.ne[0], info->name,
                              info->block_size));
    }
    int64_t blocks = t.ne[0] / info->block_size;
    for (int d = 1; d < 4; ++d) {
      if (__builtin_mul_overflow(blocks, t.ne[d], &blocks)) return fail("element count overflows");
    }
    int64_t bytes = 0;
    if (__builtin_mul_overflow(blocks, info->type_size, &bytes)) return fail("byte size overflows");
    t.num_bytes = static_cast<uint64_t>(bytes);
    if (f.tensor_index_.count(t.name) != 0) return fail("duplicate tensor name");
    f.tensor_index_.emplace(t.name, f.tensors_.size());
    f.tensors_.push_back(std::move(t));
  }
  return ok_status();
}

Status GgufParser::place_tensors(GgufFile& f) {
  const uint64_t file_size = b_.size();
  const uint64_t align = f.alignment_;
  uint64_t data_offset = (pos_ + align - 1) / align * align;
  f.data_offset_ = data_offset;
  if (f.tensors_.empty()) return ok_status();
  if (data_offset > file_size) {
    return data_loss(fmt::format("data section would start at offset {} but the file is {} bytes", data_offset,
                                 file_size));
  }
  const uint64_t data_size = file_size - data_offset;
  std::vector<const GgufTensorInfo*> order;
  for (auto& t : f.tensors_) {
    if (t.offset % align != 0) {
      return data_loss(fmt::format("tensor '{}': data offset {} is not a multiple of the alignment {}", t.name, t.offset,
                                   align));
    }
    if (t.offset > data_size || t.num_bytes > data_size - t.offset) {
      return data_loss(fmt::format("tensor '{}': data [{}, +{}) ends past the end of the file (data section holds {} "
                                   "bytes from offset {})",
                                   t.name, t.offset, t.num_bytes, data_size, data_offset));
    }
    t.data = b_.data() + data_offset + t.offset;
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i - 1]->offset + order[i - 1]->num_bytes > order[i]->offset) {
      return data_loss(fmt::format("tensors '{}' and '{}' overlap in the data section", order[i - 1]->name,
                                   order[i]->name));
    }
  }
  return ok_status();
}

Status GgufParser::parse(GgufFile& f) {
  LLMS_ASSIGN_OR_RETURN(uint32_t magic, read_pod<uint32_t>("magic"));
  if (magic != GgufFile::kMagic) {
    return data_loss(fmt::format("not a GGUF file: magic is 0x{:08x}, expected 0x{:08x} (\"GGUF\")", magic,
                                 GgufFile::kMagic));
  }
  LLMS_ASSIGN_OR_RETURN(uint32_t version, read_pod<uint32_t>("version"));
  if (version == 1) return unimplemented("GGUF version 1 is not supported (versions 2 and 3 are)");
  if (version != 2 && version != 3) {
    if ((version & 0xFFFF) == 0) {
      return unimplemented(fmt::format("GGUF version field is 0x{:08x}: a big-endian file, which is not supported",
                                       version));
    }
    return data_loss(fmt::format("unknown GGUF version {} (versions 2 and 3 are supported)", version));
  }
  f.version_ = version;
  LLMS_ASSIGN_OR_RETURN(uint64_t n_tensors, read_pod<uint64_t>("tensor count"));
  LLMS_ASSIGN_OR_RETURN(uint64_t n_kv, read_pod<uint64_t>("metadata count"));
  // A key-value pair takes at least 8 + 1 + 4 + 1 bytes, a tensor info 8 + 1 + 4 + 8 + 4 + 8.
  if (n_kv > remaining() / 14) {
    return data_loss(fmt::format("header claims {} metadata entries; the file ({} bytes) cannot hold them", n_kv,
                                 b_.size()));
  }
  if (n_tensors > limits_.max_tensors || n_tensors > remaining() / 33) {
    return data_loss(fmt::format("header claims {} tensors; the file ({} bytes) cannot hold them", n_tensors,
                                 b_.size()));
  }

  f.metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t at = pos_;
    LLMS_ASSIGN_OR_RETURN(std::string key, read_string(fmt::format("metadata key #{}", i), limits_.max_key_bytes));
    if (key.empty() || !is_valid_utf8(key)) {
      return data_loss(fmt::format("metadata key #{} at offset {} is empty or not valid UTF-8", i, at));
    }
    if (f.metadata_index_.count(key) != 0) return data_loss(fmt::format("duplicate metadata key '{}' at offset {}", key, at));
    LLMS_ASSIGN_OR_RETURN(uint32_t type_id, read_pod<uint32_t>("value type"));
    if (!gguf::value_type_valid(type_id)) {
      return data_loss(fmt::format("key '{}' at offset {}: unknown value type {}", key, at, type_id));
    }
    LLMS_ASSIGN_OR_RETURN(Value v, read_value(static_cast<ValueType>(type_id), key, 0));
    f.metadata_index_.emplace(key, f.metadata_.size());
    f.metadata_.emplace_back(std::move(key), std::move(v));
  }

  if (const Value* a = f.find("general.alignment")) {
    if (!gguf::is_integer(a->type())) return data_loss("general.alignment must be an integer");
    const uint64_t align = (a->type() == ValueType::kInt8 || a->type() == ValueType::kInt16 ||
                            a->type() == ValueType::kInt32 || a->type() == ValueType::kInt64)
                               ? static_cast<uint64_t>(a->as_i64())
                               : a->as_u64();
    if (align == 0 || (align & (align - 1)) != 0 || align > (1u << 24)) {
      return data_loss(fmt::format("general.alignment is {}; it must be a power of two", align));
    }
    f.alignment_ = static_cast<uint32_t>(align);
  }

  LLMS_RETURN_IF_ERROR(parse_tensor_infos(f, n_tensors));
  return place_tensors(f);
}

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, const GgufLimits& limits) {
  GgufFile f;
  f.bytes_ = bytes;
  f.size_ = bytes.size();
  GgufParser parser(bytes, limits);
  LLMS_RETURN_IF_ERROR(parser.parse(f));
  return f;
}

Result<GgufFile> GgufFile::open(const std::string& path, const GgufLimits& limits) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  auto mapping = std::make_unique<MappedFile>(std::move(mapped).value());
  auto parsed = parse(mapping->bytes(), limits);
  if (!parsed.ok()) return parsed.status().with_context(path);
  GgufFile f = std::move(parsed).value();
  f.mapping_ = std::move(mapping);
  f.path_ = path;
  // The metadata and the tensor table were copied out while parsing.
  f.mapping_->release(0, f.data_offset_);
  return f;
}

Result<GgufFile> GgufFile::assemble(std::string path, uint64_t size,
                                    std::vector<std::pair<std::string, gguf::Value>> metadata,
                                    std::vector<GgufTensorInfo> tensors, std::unique_ptr<GgufTensorSource> source) {
  GgufFile f;
  f.path_ = std::move(path);
  f.size_ = size;
  f.version_ = 3;
  f.source_ = std::move(source);
  for (auto& [key, value] : metadata) {
    if (!f.metadata_index_.emplace(key, f.metadata_.size()).second) {
      return invalid_argument(fmt::format("duplicate metadata key '{}'", key));
    }
    f.metadata_.emplace_back(std::move(key), std::move(value));
  }
  for (auto& t : tensors) {
    if (!f.tensor_index_.emplace(t.name, f.tensors_.size()).second) {
      return invalid_argument(fmt::format("duplicate tensor name '{}'", t.name));
    }
    f.tensors_.push_back(std::move(t));
  }
  return f;
}

void TensorData::Unmap::operator()(uint8_t* p) const { munmap(p, bytes); }

TensorData GgufFile::read(const GgufTensorInfo& t) const {
  TensorData d;
  d.view_ = t.view();
  if (t.data == nullptr) {
    // Populated at once: one call in place of a page fault per 4 KiB as it is written.
    const size_t n = std::max<size_t>(1, static_cast<size_t>(t.num_bytes));
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    d.owned_ = std::unique_ptr<uint8_t, TensorData::Unmap>(static_cast<uint8_t*>(p), TensorData::Unmap{n});
    source_->derive(t, {d.owned_.get(), static_cast<size_t>(t.num_bytes)});
    d.view_.data = d.owned_.get();
  }
  return d;
}

TensorData GgufFile::read_rows(const GgufTensorInfo& t, std::vector<int64_t>* order) const {
  order->clear();
  if (t.data == nullptr) {
    if (const uint8_t* rows = source_->reordered_rows(t, order)) {
      TensorData d;
      d.view_ = t.view();
      d.view_.data = rows;
      return d;
    }
  }
  return read(t);
}

void GgufFile::read_into(const GgufTensorInfo& t, std::span<uint8_t> out) const {
  LLMS_CHECK(out.size() == t.num_bytes, "read_into: wrong size for " + t.name);
  if (t.data == nullptr) {
    source_->derive(t, out);
  } else if (t.num_bytes > 0) {
    std::memcpy(out.data(), t.data, static_cast<size_t>(t.num_bytes));
  }
}

void GgufFile::release_all_pages() const {
  if (source_ != nullptr) source_->release_all();
  if (mapping_ != nullptr) mapping_->release(0, mapping_->size());
}

void GgufFile::release_pages(const GgufTensorInfo& t) const {
  if (t.num_bytes == 0) return;
  if (t.data == nullptr) {
    if (source_ != nullptr) source_->release_sources(t);
    return;
  }
  if (source_ != nullptr) source_->release(t.data, t.num_bytes);
  if (mapping_ != nullptr) mapping_->release(static_cast<uint64_t>(t.data - mapping_->data()), t.num_bytes);
}

const Value* GgufFile::find(std::string_view key) const {
  const auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace llms
