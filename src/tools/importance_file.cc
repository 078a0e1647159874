#include "tools/importance_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "io/gguf_file.h"
#include "io/gguf_writer.h"

namespace llms {
namespace {

constexpr const char* kSums = ".in_sum2";
constexpr const char* kCounts = ".counts";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<float> ImportanceTable::importance(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end() || it->second.count <= 0) return {};
  const ChannelSums& s = it->second;
  std::vector<float> out(s.sum_sq.size());
  double mean = 0;
  for (size_t i = 0; i < out.size(); ++i) mean += (out[i] = static_cast<float>(s.sum_sq[i] / static_cast<double>(s.count)));
  mean /= std::max<size_t>(1, out.size());
  const float floor = static_cast<float>(mean > 0 ? 1e-3 * mean : 1.0);
  for (float& v : out) v = std::max(v, floor);
  return out;
}

Status write_importance(const ImportanceTable& table, const std::string& path) {
  GgufWriter w(32);
  w.set("general.type", gguf::Value::string("imatrix"));
  w.set("imatrix.datasets", gguf::Value::string_array(table.datasets));
  w.set("imatrix.chunk_count", gguf::Value::u32(static_cast<uint32_t>(table.chunks)));
  for (const auto& [name, s] : table.tensors) {
    std::vector<float> sums(s.sum_sq.begin(), s.sum_sq.end());
    const float count = static_cast<float>(s.count);
    w.add_tensor(name + kSums, DType::kF32, {static_cast<int64_t>(sums.size())}, [sums](std::span<uint8_t> out) {
      std::memcpy(out.data(), sums.data(), sums.size() * 4);
    });
    w.add_tensor(name + kCounts, DType::kF32, {1}, [count](std::span<uint8_t> out) { std::memcpy(out.data(), &count, 4); });
  }
  return w.write(path);
}

Result<ImportanceTable> read_importance(const std::string& path) {
  LLMS_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(path));
  ImportanceTable table;
  for (const auto& t : f.tensors()) {
    if (!ends_with(t.name, kSums)) continue;
    const std::string name = t.name.substr(0, t.name.size() - std::strlen(kSums));
    const GgufTensorInfo* c = f.find_tensor(name + kCounts);
    if (t.dtype != DType::kF32 || t.n_dims != 1 || c == nullptr || c->dtype != DType::kF32 || c->num_elements() < 1) {
      return invalid_argument(fmt::format("{}: '{}' needs an F32 vector {} and an F32 {}", path, name, kSums, kCounts));
    }
    ChannelSums s;
    const auto* v = reinterpret_cast<const float*>(t.data);
    s.sum_sq.assign(v, v + t.num_elements());
    float count;
    std::memcpy(&count, c->data, 4);
    s.count = static_cast<int64_t>(count);
    table.tensors.emplace(name, std::move(s));
  }
  if (table.tensors.empty()) return invalid_argument(path + ": no importance data (no NAME.in_sum2 tensors)");
  if (auto d = f.get_string_array("imatrix.datasets"); d.ok()) table.datasets = *d;
  const auto chunks = f.get_uint_or("imatrix.chunk_count", 0);
  table.chunks = chunks.ok() ? static_cast<int64_t>(*chunks) : 0;
  return table;
}

}  // namespace llms
