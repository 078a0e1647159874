#include "server/config_keys.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "base/memory.h"

namespace llms {
namespace {

Status bad_value(const std::string& key, const std::string& value, const char* want) {
  return invalid_argument(fmt::format("{}: '{}' is not {}", key, value, want));
}

std::string toml_number(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // stays a TOML float
  return s;
}

bool parse_int(const std::string& s, int64_t* out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && p == end && !s.empty();
}

bool parse_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(*out);
}

bool parse_bytes(const std::string& s, int64_t* out) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  int64_t n = 0;
  if (i == 0 || !parse_int(s.substr(0, i), &n)) return false;
  std::string unit = s.substr(i);
  for (auto& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  int shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kib" || unit == "kb") shift = 10;
  else if (unit == "m" || unit == "mib" || unit == "mb") shift = 20;
  else if (unit == "g" || unit == "gib" || unit == "gb") shift = 30;
  else return false;
  if (n > (INT64_MAX >> shift)) return false;
  *out = n << shift;
  return true;
}

}  // namespace

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      out += fmt::format("\\u{:04X}", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

ConfigKey int_key(std::string name, std::string help, Field<int> f, int lo, int hi) {
  auto set = [name, f, lo, hi](ServeConfig& c, const std::string& v) -> Status {
    int64_t x = 0;
    if (!parse_int(v, &x)) return bad_value(name, v, "an integer");
    if (x < lo || x > hi) return invalid_argument(fmt::format("{}: {} is not in {}..{}", name, x, lo, hi));
    f(c) = static_cast<int>(x);
    return ok_status();
  };
  return {name, ConfigType::kInt, std::move(help), set, [f](const ServeConfig& c) {
            return std::to_string(f(const_cast<ServeConfig&>(c)));
          }};
}

ConfigKey i64_key(std::string name, std::string help, Field<int64_t> f, ConfigType type) {
  auto set = [name, f, type](ServeConfig& c, const std::string& v) -> Status {
    int64_t x = 0;
    const bool ok = type == ConfigType::kBytes ? parse_bytes(v, &x) : parse_int(v, &x);
    if (!ok) return bad_value(name, v, type == ConfigType::kBytes ? "a byte size (e.g. 1048576 or 64MiB)" : "an integer");
    if (x < 0) return invalid_argument(fmt::format("{}: must be >= 0", name));
    f(c) = x;
    return ok_status();
  };
  return {name, type, std::move(help), set, [f](const ServeConfig& c) {
            return std::to_string(f(const_cast<ServeConfig&>(c)));
          }};
}

// A memory size: bytes as for i64_key, or "NN%" of the machine's (or cgroup's) memory.
ConfigKey memory_key(std::string name, std::string help, Field<int64_t> f) {
  auto set = [name, f](ServeConfig& c, const std::string& v) -> Status {
    int64_t x = 0;
    if (!v.empty() && v.back() == '%') {
      double pct = 0;
      if (!parse_number(v.substr(0, v.size() - 1), &pct) || pct <= 0 || pct > 100) {
        return bad_value(name, v, "a percentage in (0, 100]");
      }
      f(c) = static_cast<int64_t>(static_cast<double>(machine_memory_bytes()) * pct / 100.0);
      return ok_status();
    }
    if (!parse_bytes(v, &x)) return bad_value(name, v, "a byte size (e.g. 2GiB) or a percentage of memory (e.g. 25%)");
    f(c) = x;
    return ok_status();
  };
  return {name, ConfigType::kBytes, std::move(help), set, [f](const ServeConfig& c) {
            return std::to_string(f(const_cast<ServeConfig&>(c)));
          }};
}

ConfigKey num_key(std::string name, std::string help, Field<double> f) {
  auto set = [name, f](ServeConfig& c, const std::string& v) -> Status {
    double x = 0;
    if (!parse_number(v, &x)) return bad_value(name, v, "a number");
    f(c) = x;
    return ok_status();
  };
  return {name, ConfigType::kNumber, std::move(help), set, [f](const ServeConfig& c) {
            return toml_number(f(const_cast<ServeConfig&>(c)));
          }};
}

ConfigKey bool_key(std::string name, std::string help, Field<bool> f) {
  auto set = [name, f](ServeConfig& c, const std::string& v) -> Status {
    if (v == "true" || v == "1" || v == "on" || v == "yes") {
      f(c) = true;
    } else if (v == "false" || v == "0" || v == "off" || v == "no") {
      f(c) = false;
    } else {
      return bad_value(name, v, "a boolean (true or false)");
    }
    return ok_status();
  };
  return {name, ConfigType::kBool, std::move(help), set, [f](const ServeConfig& c) {
            return std::string(f(const_cast<ServeConfig&>(c)) ? "true" : "false");
          }};
}

ConfigKey str_key(std::string name, std::string help, Field<std::string> f) {
  auto set = [f](ServeConfig& c, const std::string& v) -> Status {
    f(c) = v;
    return ok_status();
  };
  return {name, ConfigType::kString, std::move(help), set, [f](const ServeConfig& c) {
            return toml_string(f(const_cast<ServeConfig&>(c)));
          }};
}

// A string that must never be printed: get() says only whether it is set.
ConfigKey secret_key(std::string name, std::string help, Field<std::string> f) {
  ConfigKey k = str_key(std::move(name), std::move(help), f);
  k.get = [f](const ServeConfig& c) {
    return f(const_cast<ServeConfig&>(c)).empty() ? std::string("\"\"") : std::string(kRedacted);
  };
  k.secret = true;
  return k;
}

ConfigKey dtype_key(std::string name, std::string help, Field<DType> f) {
  auto set = [name, f](ServeConfig& c, const std::string& v) -> Status {
    const auto t = dtype_from_name(v);
    if (!t || (*t != DType::kF32 && *t != DType::kF16 && *t != DType::kBF16 && *t != DType::kQ8_0 && *t != DType::kQ4_0)) {
      return bad_value(name, v, "a KV cache type (f32, f16, bf16, q8_0, q4_0)");
    }
    f(c) = *t;
    return ok_status();
  };
  return {name, ConfigType::kString, std::move(help), set, [f](const ServeConfig& c) {
            return toml_string(std::string(dtype_name(f(const_cast<ServeConfig&>(c)))));
          }};
}

}  // namespace llms
