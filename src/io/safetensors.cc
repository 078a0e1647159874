#include "io/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace llms {
namespace {

using nlohmann::json;

struct DTypeName {
  const char* name;
  int64_t size;
  std::optional<DType> type;
};

constexpr DTypeName kDTypes[] = {
    {"F32", 4, DType::kF32}, {"F16", 2, DType::kF16}, {"BF16", 2, DType::kBF16}, {"F64", 8, std::nullopt},
    {"I64", 8, std::nullopt}, {"U64", 8, std::nullopt}, {"I32", 4, std::nullopt}, {"U32", 4, std::nullopt},
    {"I16", 2, std::nullopt}, {"U16", 2, std::nullopt}, {"I8", 1, std::nullopt}, {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const DTypeName* find_dtype(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

// Thrown inside the JSON parser's callback, caught in parse_header().
struct DuplicateKey {
  std::string key;
};

// Parses the header, refusing a duplicate key in any object (JSON allows them; the
// parser would keep the last, and two tensors of one name would go unnoticed).
Result<json> parse_header(std::string_view text) {
  std::vector<std::set<std::string>> open_objects;
  json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.empty() &&
        !open_objects.back().insert(parsed.get<std::string>()).second) {
      throw DuplicateKey{parsed.get<std::string>()};
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const DuplicateKey& d) {
    return data_loss(fmt::format("the header names '{}' twice", d.key));
  } catch (const json::exception& e) {
    return data_loss(fmt::format("the header is not valid JSON: {}", e.what()));
  }
}

}  // namespace

int64_t safetensors_element_size(std::string_view dtype_name) {
  const DTypeName* d = find_dtype(dtype_name);
  return d == nullptr ? 0 : d->size;
}

std::string_view safetensors_dtype_name(DType type) {
  for (const auto& d : kDTypes) {
    if (d.type == type) return d.name;
  }
  return {};
}

int64_t SafetensorsTensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string SafetensorsTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

class SafetensorsParser {
 public:
  SafetensorsParser(std::span<const uint8_t> bytes, const SafetensorsLimits& limits) : b_(bytes), limits_(limits) {}

  Status parse(SafetensorsFile& f) {
    if (b_.size() < 8) return data_loss(fmt::format("truncated: {} bytes, the header length alone takes 8", b_.size()));
    uint64_t n = 0;
    std::memcpy(&n, b_.data(), 8);  // little-endian, as every machine llmserve runs on
    if (n > limits_.max_header_bytes) {
      return data_loss(fmt::format("header length {} is over the limit of {} bytes", n, limits_.max_header_bytes));
    }
    if (n > b_.size() - 8) {
      return data_loss(fmt::format("truncated: the header claims {} bytes but only {} follow its length", n,
                                   b_.size() - 8));
    }
    if (n < 2 || b_[8] != '{') return data_loss("the header does not start with '{' (not a safetensors file?)");
    f.data_offset_ = 8 + n;
    LLMS_ASSIGN_OR_RETURN(json header, parse_header({reinterpret_cast<const char*>(b_.data() + 8), n}));
    if (!header.is_object()) return data_loss("the header is not a JSON object");
    if (header.size() > limits_.max_tensors + 1) {
      return data_loss(fmt::format("the header lists {} entries, over the limit of {}", header.size(), limits_.max_tensors));
    }
    for (auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        LLMS_RETURN_IF_ERROR(read_metadata(entry, f));
        continue;
      }
      LLMS_ASSIGN_OR_RETURN(SafetensorsTensor t, read_entry(name, entry));
      f.tensors_.push_back(std::move(t));
    }
    return place(f);
  }

 private:
  static Status read_metadata(const json& m, SafetensorsFile& f) {
    if (!m.is_object()) return data_loss("'__metadata__' is not an object of strings");
    for (const auto& [key, value] : m.items()) {
      if (!value.is_string()) return data_loss(fmt::format("'__metadata__' key '{}' is not a string", key));
      f.metadata_[key] = value.get<std::string>();
    }
    return ok_status();
  }

  Result<SafetensorsTensor> read_entry(const std::string& name, const json& e) const {
    auto bad = [&](std::string_view what) { return data_loss(fmt::format("tensor '{}': {}", name, what)); };
    if (name.empty()) return data_loss("a tensor has an empty name");
    if (!e.is_object()) return bad("its entry is not an object");
    for (const auto& [key, v] : e.items()) {
      if (key != "dtype" && key != "shape" && key != "data_offsets") return bad(fmt::format("unknown field '{}'", key));
    }
    if (!e.contains("dtype") || !e["dtype"].is_string()) return bad("'dtype' is missing or not a string");
    if (!e.contains("shape") || !e["shape"].is_array()) return bad("'shape' is missing or not an array");
    if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2) {
      return bad("'data_offsets' is missing or not [begin, end]");
    }
    SafetensorsTensor t;
    t.name = name;
    t.dtype_name = e["dtype"].get<std::string>();
    const DTypeName* d = find_dtype(t.dtype_name);
    if (d == nullptr) return bad(fmt::format("unknown dtype '{}'", t.dtype_name));
    t.dtype = d->type;
    t.element_size = d->size;
    const json& shape = e["shape"];
    if (static_cast<int>(shape.size()) > limits_.max_rank) {
      return bad(fmt::format("{} dimensions, more than {}", shape.size(), limits_.max_rank));
    }
    // The element count is bounded by the file, so a product past it (or past 2^62)
    // is an error before it could overflow.
    uint64_t elements = 1;
    for (const json& dim : shape) {
      if (!dim.is_number_unsigned()) return bad("a dimension is not a non-negative integer");
      const uint64_t v = dim.get<uint64_t>();
      if (v > (uint64_t{1} << 62)) return bad(fmt::format("dimension {} is too large", v));
      if (v != 0 && elements > b_.size() / v) elements = b_.size() + 1;  // more than the file can hold
      else elements *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    const json& off = e["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) return bad("'data_offsets' are not non-negative integers");
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (end < begin) return bad(fmt::format("data_offsets [{}, {}] end before they begin", begin, end));
    t.offset = begin;
    t.num_bytes = end - begin;
    if (elements > b_.size() || elements * static_cast<uint64_t>(t.element_size) != t.num_bytes) {
      return bad(fmt::format("shape {} of {} takes {} bytes but data_offsets [{}, {}] hold {}", t.shape_string(),
                             t.dtype_name, elements > b_.size() ? std::string("more than the file's")
                                                                : std::to_string(elements * t.element_size),
                             begin, end, t.num_bytes));
    }
    return t;
  }

  // Tensors must tile the data section exactly, in offset order, each aligned to its
  // element size in the file.
  Status place(SafetensorsFile& f) const {
    const uint64_t data_size = b_.size() - f.data_offset_;
    std::sort(f.tensors_.begin(), f.tensors_.end(), [](const auto& a, const auto& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.num_bytes < b.num_bytes;
    });
    uint64_t at = 0;
    for (size_t i = 0; i < f.tensors_.size(); ++i) {
      SafetensorsTensor& t = f.tensors_[i];
      if (t.offset < at) {
        return data_loss(fmt::format("tensors '{}' and '{}' overlap at data offset {}", f.tensors_[i - 1].name, t.name,
                                     t.offset));
      }
      if (t.offset > at) {
        return data_loss(fmt::format("a gap of {} bytes before tensor '{}' at data offset {}", t.offset - at, t.name, at));
      }
      if (t.num_bytes > data_size - at) {
        return data_loss(fmt::format("truncated: tensor '{}' needs data [{}, {}) but the data section holds {} bytes",
                                     t.name, t.offset, t.offset + t.num_bytes, data_size));
      }
      const uint64_t file_offset = f.data_offset_ + t.offset;
      if (file_offset % static_cast<uint64_t>(t.element_size) != 0) {
        return data_loss(fmt::format("tensor '{}' starts at file offset {}, not a multiple of its {}-byte elements "
                                     "(save the file again with a current safetensors, which pads the header)",
                                     t.name, file_offset, t.element_size));
      }
      t.data = b_.data() + file_offset;
      at += t.num_bytes;
      f.index_.emplace(t.name, i);
    }
    if (at != data_size) {
      return data_loss(fmt::format("{} bytes after the last tensor's data (at data offset {}): the file does not "
                                   "end where its header says", data_size - at, at));
    }
    return ok_status();
  }

  std::span<const uint8_t> b_;
  const SafetensorsLimits& limits_;
};

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, const SafetensorsLimits& limits) {
  SafetensorsFile f;
  f.bytes_ = bytes;
  SafetensorsParser parser(bytes, limits);
  LLMS_RETURN_IF_ERROR(parser.parse(f));
  return f;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path, const SafetensorsLimits& limits) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  auto mapping = std::make_unique<MappedFile>(std::move(mapped).value());
  auto parsed = parse(mapping->bytes(), limits);
  if (!parsed.ok()) return parsed.status().with_context(path);
  SafetensorsFile f = std::move(parsed).value();
  f.mapping_ = std::move(mapping);
  f.path_ = path;
  f.mapping_->release(0, f.data_offset_);  // the header was parsed into copies
  return f;
}

uint64_t SafetensorsOutput::num_bytes() const {
  uint64_t n = static_cast<uint64_t>(safetensors_element_size(safetensors_dtype_name(dtype)));
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

Status write_safetensors(const std::string& path, std::vector<SafetensorsOutput> tensors,
                         const std::map<std::string, std::string>& metadata) {
  for (const auto& t : tensors) {
    if (safetensors_dtype_name(t.dtype).empty()) {
      return invalid_argument(fmt::format("tensor '{}': type {} cannot be written to safetensors (F32, F16, BF16)",
                                          t.name, dtype_name(t.dtype)));
    }
  }
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
    const int64_t ea = safetensors_element_size(safetensors_dtype_name(a.dtype));
    const int64_t eb = safetensors_element_size(safetensors_dtype_name(b.dtype));
    return ea != eb ? ea > eb : a.name < b.name;
  });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t at = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + t.num_bytes()}}};
    at += t.num_bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::string tmp = path + ".tmp";
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  if (out == nullptr) return invalid_argument(fmt::format("cannot create '{}'", tmp));
  const uint64_t n = text.size();
  bool ok = std::fwrite(&n, 8, 1, out) == 1 && std::fwrite(text.data(), 1, text.size(), out) == text.size();
  std::vector<uint8_t> buf;
  for (const auto& t : tensors) {
    if (!ok) break;
    buf.resize(t.num_bytes());
    t.fill(buf);
    ok = std::fwrite(buf.data(), 1, buf.size(), out) == buf.size();
  }
  ok = std::fclose(out) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return internal_error(fmt::format("error writing '{}'", path));
  }
  return ok_status();
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace llms
