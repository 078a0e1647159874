#include "tools/importance_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "io/gguf_writer.h"
#include "tools/llama_imatrix_dat.h"

namespace llms {
namespace {

constexpr const char* kSums = ".in_sum2";
constexpr const char* kCounts = ".counts";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<float> floats_of(const GgufTensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  std::memcpy(v.data(), t.data, v.size() * 4);
  return v;
}

// NAME.in_sum2 [cols] or [cols, n_matrices] and its NAME.counts [1] or [1, n_matrices].
Result<ChannelSums> read_gguf_entry(const GgufFile& f, const GgufTensorInfo& t, const std::string& name) {
  const auto bad = [&](const std::string& what) {
    return invalid_argument(fmt::format("{}: importance entry '{}': {}", f.path(), name, what));
  };
  const GgufTensorInfo* c = f.find_tensor(name + kCounts);
  if (t.dtype != DType::kF32 || t.n_dims > 2) return bad(fmt::format("{} must be an F32 vector or [cols, experts] matrix", kSums));
  if (c == nullptr || c->dtype != DType::kF32) return bad(fmt::format("needs an F32 {} tensor beside its {}", kCounts, kSums));
  const int64_t n_mat = t.ne[1];
  if (c->num_elements() != 1 && c->num_elements() != n_mat) {
    return bad(fmt::format("{} holds {} counts for {} matrices of sums", kCounts, c->num_elements(), n_mat));
  }
  ChannelSums s;
  for (const float v : floats_of(t)) {
    if (!std::isfinite(v) || v < 0) return bad(fmt::format("a sum of squares is {}", v));
    s.sum_sq.push_back(v);
  }
  for (const float v : floats_of(*c)) {
    if (!std::isfinite(v) || v < 0 || v > 9e18f) return bad(fmt::format("a token count is {}", v));
    s.matrix_counts.push_back(std::llround(v));
  }
  if (s.matrix_counts.size() == 1) {
    s.count = s.matrix_counts[0];
    s.matrix_counts.clear();
  } else {
    for (const int64_t n : s.matrix_counts) s.count += n;
  }
  return s;
}

Result<ImportanceTable> read_gguf_importance(const std::string& path) {
  auto opened = GgufFile::open(path);
  if (!opened.ok()) return invalid_argument(fmt::format("{}: not a readable GGUF importance file: {}", path, opened.status().message()));
  const GgufFile& f = *opened;
  ImportanceTable table;
  table.source = path;
  for (const auto& t : f.tensors()) {
    if (!ends_with(t.name, kSums)) continue;
    const std::string name = t.name.substr(0, t.name.size() - std::strlen(kSums));
    LLMS_ASSIGN_OR_RETURN(ChannelSums s, read_gguf_entry(f, t, name));
    table.tensors.emplace(name, std::move(s));
  }
  if (table.tensors.empty()) return invalid_argument(path + ": no importance data (no NAME.in_sum2 tensors)");
  if (auto d = f.get_string_array("imatrix.datasets"); d.ok()) table.datasets = *d;
  const auto chunks = f.get_uint_or("imatrix.chunk_count", 0);
  table.chunks = chunks.ok() ? static_cast<int64_t>(*chunks) : 0;
  return table;
}

// `llmserve imatrix` names the products the model computes; of a fused tensor
// (GPT-2's and Phi-3's attn_qkv, Phi-3's gate-and-up ffn_up) those are its slices,
// which share its input. The fused tensor's name for such a slice, or empty.
std::string fused_holder(const std::string& name) {
  for (const char* part : {".attn_q.weight", ".attn_k.weight", ".attn_v.weight"}) {
    if (ends_with(name, part)) return name.substr(0, name.size() - std::strlen(part)) + ".attn_qkv.weight";
  }
  const std::string gate = ".ffn_gate.weight";
  if (ends_with(name, gate)) return name.substr(0, name.size() - gate.size()) + ".ffn_up.weight";
  return {};
}

// Matrices a weight stacks: its experts for [cols, rows, n_expert], else one.
int64_t matrices_of(const GgufTensorInfo& t) { return t.num_elements() / (t.ne[0] * t.ne[1]); }

}  // namespace

std::vector<float> ImportanceTable::importance(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) return {};
  const ChannelSums& s = it->second;
  const size_t n_mat = s.matrix_counts.empty() ? 1 : s.matrix_counts.size();
  const size_t cols = s.sum_sq.size() / n_mat;
  std::vector<float> out(s.sum_sq.size());
  std::vector<bool> seen(n_mat);
  double mean = 0;
  size_t n_seen = 0;
  for (size_t m = 0; m < n_mat; ++m) {
    const int64_t count = s.matrix_counts.empty() ? s.count : s.matrix_counts[m];
    if (count <= 0) continue;
    seen[m] = true;
    ++n_seen;
    for (size_t i = m * cols; i < (m + 1) * cols; ++i) {
      mean += (out[i] = static_cast<float>(s.sum_sq[i] / static_cast<double>(count)));
    }
  }
  if (n_seen == 0) return {};
  mean /= std::max<size_t>(1, n_seen * cols);
  for (size_t m = 0; m < n_mat; ++m) {
    if (!seen[m]) std::fill(out.begin() + m * cols, out.begin() + (m + 1) * cols, static_cast<float>(mean));
  }
  const float floor = static_cast<float>(mean > 0 ? 1e-3 * mean : 1.0);
  for (float& v : out) v = std::max(v, floor);
  return out;
}

std::vector<float> ImportanceTable::tensor_importance(const std::string& tensor) const {
  std::vector<float> imp = importance(tensor);
  const std::string qkv = ".attn_qkv.weight";
  if (imp.empty() && ends_with(tensor, qkv)) imp = importance(tensor.substr(0, tensor.size() - qkv.size()) + ".attn_q.weight");
  return imp;
}

Status write_importance(const ImportanceTable& table, const std::string& path) {
  GgufWriter w(32);
  w.set("general.type", gguf::Value::string("imatrix"));
  w.set("imatrix.datasets", gguf::Value::string_array(table.datasets));
  w.set("imatrix.chunk_count", gguf::Value::u32(static_cast<uint32_t>(table.chunks)));
  for (const auto& [name, s] : table.tensors) {
    std::vector<float> sums(s.sum_sq.begin(), s.sum_sq.end());
    std::vector<float> counts;
    for (const int64_t n : s.matrix_counts) counts.push_back(static_cast<float>(n));
    if (counts.empty()) counts.push_back(static_cast<float>(s.count));
    const auto n_mat = static_cast<int64_t>(counts.size());
    // One matrix: [cols] and [1]; stacked: [cols, n_mat] and [1, n_mat], as llama.cpp.
    std::vector<int64_t> sums_ne = {static_cast<int64_t>(sums.size()) / n_mat}, counts_ne = {1};
    if (n_mat > 1) sums_ne.push_back(n_mat), counts_ne.push_back(n_mat);
    w.add_tensor(name + kSums, DType::kF32, sums_ne, [sums](std::span<uint8_t> out) {
      std::memcpy(out.data(), sums.data(), sums.size() * 4);
    });
    w.add_tensor(name + kCounts, DType::kF32, counts_ne, [counts](std::span<uint8_t> out) {
      std::memcpy(out.data(), counts.data(), counts.size() * 4);
    });
  }
  return w.write(path);
}

Result<ImportanceTable> read_importance(const std::string& path) {
  char magic[4] = {};
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return not_found(path + ": cannot open the importance file");
    in.read(magic, 4);
  }
  if (std::memcmp(magic, "GGUF", 4) == 0) return read_gguf_importance(path);
  return read_llama_imatrix_dat(path);
}

Status check_importance_fits(const ImportanceTable& table, const GgufFile& model) {
  const std::string source = table.source.empty() ? std::string("importance table") : table.source;
  for (const auto& [name, s] : table.tensors) {
    const GgufTensorInfo* t = model.find_tensor(name);
    if (t == nullptr && !fused_holder(name).empty()) t = model.find_tensor(fused_holder(name));
    if (t == nullptr) {
      return invalid_argument(fmt::format("{}: entry '{}' names no tensor of {}: an importance file for another model?",
                                          source, name, model.path()));
    }
    if (t->n_dims < 2) return invalid_argument(fmt::format("{}: entry '{}' is a vector in {}, not a matrix", source, name, model.path()));
    const int64_t cols = t->ne[0], n_mat = matrices_of(*t);
    const auto values = static_cast<int64_t>(s.sum_sq.size());
    const bool fits = s.matrix_counts.empty() ? (values == cols || values == cols * n_mat)
                                              : (static_cast<int64_t>(s.matrix_counts.size()) == n_mat && values == cols * n_mat);
    if (!fits) {
      return invalid_argument(fmt::format("{}: entry '{}' has {} values{}, but the tensor in {} has rows of {}{}", source, name,
                                          values,
                                          s.matrix_counts.empty() ? std::string() : fmt::format(" in {} matrices", s.matrix_counts.size()),
                                          model.path(), cols, n_mat > 1 ? fmt::format(" in {} matrices", n_mat) : std::string()));
    }
  }
  return ok_status();
}

}  // namespace llms
