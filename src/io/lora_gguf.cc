// io/lora_file.h: the GGUF form (llama.cpp's adapters) and the dispatch on the path.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "io/gguf_writer.h"
#include "io/lora_file.h"
#include "quant/row_convert.h"

namespace llms {

float LoraFile::scale(int64_t rank) const {
  if (alpha == 0.0f) return 1.0f;
  return rslora ? alpha / std::sqrt(static_cast<float>(rank)) : alpha / static_cast<float>(rank);
}

Result<LoraFile> read_lora(const std::string& path, const GgufFile& base) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return read_lora_peft(path, base);
  return read_lora_gguf(path, base);
}

namespace {

constexpr std::string_view kSuffixA = ".lora_a", kSuffixB = ".lora_b";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The floats of a 2-D tensor of any type dequantize_row() reads.
Result<std::vector<float>> tensor_floats(const GgufFile& f, const GgufTensorInfo& t) {
  if (t.n_dims != 2) return invalid_argument(fmt::format("tensor '{}' has {} dimensions, not 2", t.name, t.n_dims));
  if (!can_dequantize(t.dtype)) {
    return unimplemented(fmt::format("tensor '{}' is {}, which adapters cannot be read as", t.name, dtype_name(t.dtype)));
  }
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  dequantize_row(t.dtype, f.read(t).data(), v.data(), t.num_elements());
  return v;
}

Status check_header(const GgufFile& f, const GgufFile& base) {
  LLMS_ASSIGN_OR_RETURN(std::string type, f.get_string_or("general.type", ""));
  if (type != "adapter") {
    return invalid_argument(fmt::format("not a LoRA adapter: general.type is '{}', not 'adapter'", type));
  }
  LLMS_ASSIGN_OR_RETURN(std::string adapter, f.get_string_or("adapter.type", ""));
  if (adapter != "lora") return unimplemented(fmt::format("adapter.type is '{}'; only 'lora' adapters are read", adapter));
  LLMS_ASSIGN_OR_RETURN(std::string arch, f.get_string("general.architecture"));
  LLMS_ASSIGN_OR_RETURN(std::string base_arch, base.get_string("general.architecture"));
  if (arch != base_arch) {
    return invalid_argument(fmt::format("the adapter is for architecture '{}', the base model is '{}'", arch, base_arch));
  }
  return ok_status();
}

Result<LoraFile> read_gguf(const std::string& path, const GgufFile& base) {
  LLMS_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(path));
  LLMS_RETURN_IF_ERROR(check_header(f, base));
  LoraFile lora;
  lora.path = path;
  lora.format = "gguf";
  LLMS_ASSIGN_OR_RETURN(lora.arch, f.get_string("general.architecture"));
  LLMS_ASSIGN_OR_RETURN(double alpha, f.get_float_or("adapter.lora.alpha", 0.0));
  lora.alpha = static_cast<float>(alpha);
  std::map<std::string, std::pair<const GgufTensorInfo*, const GgufTensorInfo*>> pairs;
  for (const GgufTensorInfo& t : f.tensors()) {
    const bool is_a = ends_with(t.name, kSuffixA), is_b = ends_with(t.name, kSuffixB);
    if (!is_a && !is_b) return invalid_argument(fmt::format("tensor '{}' is neither a .lora_a nor a .lora_b", t.name));
    auto& p = pairs[t.name.substr(0, t.name.size() - kSuffixA.size())];
    (is_a ? p.first : p.second) = &t;
  }
  if (pairs.empty()) return invalid_argument("the adapter has no tensors");
  for (const auto& [target, p] : pairs) {
    if (p.first == nullptr || p.second == nullptr) {
      return invalid_argument(fmt::format("'{}' has a {} but no {}", target, p.first ? "lora_a" : "lora_b",
                                          p.first ? "lora_b" : "lora_a"));
    }
    const GgufTensorInfo &a = *p.first, &b = *p.second;
    LoraMatrix m;
    m.target = target;
    m.cols = a.ne[0], m.rank = a.ne[1], m.rows = b.ne[1];
    if (b.ne[0] != m.rank) {
      return invalid_argument(fmt::format("'{}': lora_a has rank {} (ne [{}, {}]) but lora_b {} (ne [{}, {}]); lora_a "
                                          "must be [n_in, rank] and lora_b [rank, n_out]",
                                          target, m.rank, a.ne[0], a.ne[1], b.ne[0], b.ne[0], b.ne[1]));
    }
    LLMS_ASSIGN_OR_RETURN(m.a, tensor_floats(f, a));
    LLMS_ASSIGN_OR_RETURN(m.b, tensor_floats(f, b));
    lora.matrices.push_back(std::move(m));
  }
  return lora;
}

}  // namespace

Result<LoraFile> read_lora_gguf(const std::string& path, const GgufFile& base) {
  auto lora = read_gguf(path, base);
  if (!lora.ok()) return lora.status().with_context(path);
  return lora;
}

Status write_lora_gguf(const LoraFile& lora, DType type, const std::string& path) {
  if (type != DType::kF32 && type != DType::kF16) return invalid_argument("adapters are written as F32 or F16");
  GgufWriter w;
  w.set("general.architecture", gguf::Value::string(lora.arch));
  w.set("general.type", gguf::Value::string("adapter"));
  w.set("general.name", gguf::Value::string("synthetic LoRA (random weights)"));
  w.set("adapter.type", gguf::Value::string("lora"));
  w.set("adapter.lora.alpha", gguf::Value::f32(lora.alpha));
  for (const LoraMatrix& m : lora.matrices) {
    auto filler = [type](const std::vector<float>& v) {
      return [&v, type](std::span<uint8_t> out) { quantize_row(type, v.data(), out.data(), static_cast<int64_t>(v.size())); };
    };
    w.add_tensor(m.target + std::string(kSuffixA), type, {m.cols, m.rank}, filler(m.a));
    w.add_tensor(m.target + std::string(kSuffixB), type, {m.rank, m.rows}, filler(m.b));
  }
  return w.write(path);
}

}  // namespace llms
