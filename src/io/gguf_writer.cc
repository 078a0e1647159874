#include "io/gguf_writer.h"

#include "io/gguf_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/check.h"

namespace llms {

uint32_t gguf_file_type(DType weights) {
  switch (weights) {
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ4_1: return 3;
    case DType::kQ8_0: return 7;
    case DType::kQ5_0: return 8;
    case DType::kQ5_1: return 9;
    case DType::kQ2_K: return 10;
    case DType::kQ3_K: return 11;  // Q3_K_S
    case DType::kQ4_K: return 14;  // Q4_K_S
    case DType::kQ5_K: return 16;  // Q5_K_S
    case DType::kQ6_K: return 18;
    case DType::kIQ4_NL: return 25;
    case DType::kIQ4_XS: return 30;
    case DType::kBF16: return 32;
    default: return 0;
  }
}

using gguf::Value;
using gguf::ValueType;

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  LLMS_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0, "alignment must be a power of two");
  if (alignment != 32) set("general.alignment", Value::u32(alignment));
}

void GgufWriter::set(const std::string& key, Value value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::erase(const std::string& key) {
  std::erase_if(metadata_, [&](const auto& kv) { return kv.first == key; });
}

void GgufWriter::add_tensor(const std::string& name, DType dtype, std::vector<int64_t> ne,
                            std::span<const uint8_t> data) {
  int64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  const uint64_t bytes = static_cast<uint64_t>(dtype_row_bytes(dtype, ne.at(0)) * rows);
  LLMS_CHECK(data.size() == bytes, "tensor " + name + ": data size does not match its shape");
  tensors_.push_back({name, dtype, std::move(ne), bytes, data, nullptr});
}

void GgufWriter::add_tensor(const std::string& name, DType dtype, std::vector<int64_t> ne, Filler fill) {
  int64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  const uint64_t bytes = static_cast<uint64_t>(dtype_row_bytes(dtype, ne.at(0)) * rows);
  tensors_.push_back({name, dtype, std::move(ne), bytes, {}, std::move(fill)});
}

namespace {

class Emitter {
 public:
  explicit Emitter(const std::function<bool(const void*, size_t)>& sink) : sink_(sink) {}
  bool raw(const void* p, size_t n) {
    pos_ += n;
    return sink_(p, n);
  }
  template <typename T>
  bool pod(const T& v) { return raw(&v, sizeof(T)); }
  bool str(const std::string& s) { return pod<uint64_t>(s.size()) && raw(s.data(), s.size()); }
  bool pad_to(uint64_t align) {
    static const char zeros[256] = {};
    uint64_t n = (align - pos_ % align) % align;
    while (n > 0) {
      const size_t k = n < sizeof(zeros) ? n : sizeof(zeros);
      if (!raw(zeros, k)) return false;
      n -= k;
    }
    return true;
  }
  bool value(const Value& v) {
    switch (v.type()) {
      case ValueType::kUint8: return pod<uint8_t>(static_cast<uint8_t>(v.as_u64()));
      case ValueType::kInt8: return pod<int8_t>(static_cast<int8_t>(v.as_i64()));
      case ValueType::kUint16: return pod<uint16_t>(static_cast<uint16_t>(v.as_u64()));
      case ValueType::kInt16: return pod<int16_t>(static_cast<int16_t>(v.as_i64()));
      case ValueType::kUint32: return pod<uint32_t>(static_cast<uint32_t>(v.as_u64()));
      case ValueType::kInt32: return pod<int32_t>(static_cast<int32_t>(v.as_i64()));
      case ValueType::kUint64: return pod<uint64_t>(v.as_u64());
      case ValueType::kInt64: return pod<int64_t>(v.as_i64());
      case ValueType::kFloat32: return pod<float>(static_cast<float>(v.as_f64()));
      case ValueType::kFloat64: return pod<double>(v.as_f64());
      case ValueType::kBool: return pod<uint8_t>(v.as_bool() ? 1 : 0);
      case ValueType::kString: return str(v.as_string());
      case ValueType::kArray: {
        const auto& a = v.as_array();
        if (!pod<uint32_t>(static_cast<uint32_t>(a.elem_type)) || !pod<uint64_t>(a.items.size())) return false;
        for (const auto& item : a.items) {
          LLMS_CHECK(item.type() == a.elem_type, "array element type mismatch");
          if (!value(item)) return false;
        }
        return true;
      }
    }
    return false;
  }
  uint64_t pos() const { return pos_; }

 private:
  const std::function<bool(const void*, size_t)>& sink_;
  uint64_t pos_ = 0;
};

}  // namespace

bool GgufWriter::emit(const std::function<bool(const void*, size_t)>& sink) const {
  Emitter e(sink);
  if (!e.pod<uint32_t>(0x46554747) || !e.pod<uint32_t>(3) || !e.pod<uint64_t>(tensors_.size()) ||
      !e.pod<uint64_t>(metadata_.size())) {
    return false;
  }
  for (const auto& [k, v] : metadata_) {
    if (!e.str(k) || !e.pod<uint32_t>(static_cast<uint32_t>(v.type())) || !e.value(v)) return false;
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    if (!e.str(t.name) || !e.pod<uint32_t>(static_cast<uint32_t>(t.ne.size()))) return false;
    for (int64_t d : t.ne)
      if (!e.pod<uint64_t>(static_cast<uint64_t>(d))) return false;
    if (!e.pod<uint32_t>(static_cast<uint32_t>(t.dtype)) || !e.pod<uint64_t>(offset)) return false;
    offset += (t.num_bytes + alignment_ - 1) / alignment_ * alignment_;
  }
  if (!e.pad_to(alignment_)) return false;
  std::vector<uint8_t> scratch;
  for (const auto& t : tensors_) {
    if (t.fill) {
      scratch.assign(t.num_bytes, 0);
      t.fill(scratch);
      if (!e.raw(scratch.data(), scratch.size())) return false;
    } else if (!e.raw(t.data.data(), t.data.size())) {
      return false;
    }
    if (!e.pad_to(alignment_)) return false;
  }
  return true;
}

Status GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return invalid_argument("cannot create '" + tmp + "': " + std::strerror(errno));
  std::vector<char> buf(1 << 20);
  std::setvbuf(f, buf.data(), _IOFBF, buf.size());
  const bool ok = emit([&](const void* p, size_t n) { return n == 0 || std::fwrite(p, 1, n, f) == n; });
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    return internal_error("error writing '" + path + "' (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return internal_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  }
  return ok_status();
}

std::vector<uint8_t> GgufWriter::write_to_memory() const {
  std::vector<uint8_t> out;
  emit([&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
    return true;
  });
  return out;
}

void set_spm_vocabulary(GgufWriter& w, const SpmVocabulary& vocab) {
  w.set("tokenizer.ggml.model", Value::string("llama"));
  w.set("tokenizer.ggml.tokens", Value::string_array(vocab.tokens));
  w.set("tokenizer.ggml.scores", Value::f32_array(vocab.scores));
  w.set("tokenizer.ggml.token_type", Value::i32_array(vocab.types));
  w.set("tokenizer.ggml.unknown_token_id", Value::u32(0));
  w.set("tokenizer.ggml.bos_token_id", Value::u32(1));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(2));
}

GgufWriter gguf_writer_for(const GgufFile& file) {
  GgufWriter w(file.alignment());
  for (const auto& [key, value] : file.metadata()) {
    if (key != "general.alignment") w.set(key, value);
  }
  for (const GgufTensorInfo& t : file.tensors()) {
    const GgufTensorInfo* src = &t;
    w.add_tensor(t.name, t.dtype, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                 [&file, src](std::span<uint8_t> out) { file.read_into(*src, out); });
  }
  return w;
}

}  // namespace llms
