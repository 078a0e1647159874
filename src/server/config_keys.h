// The typed keys of the configuration table (config_file.h): each parses its text
// form into a field of ServeConfig, checks its type and range (naming the key), and
// prints its TOML literal. `f` reaches the field the key sets.
//
// Thread-safety: pure functions; the keys they make are immutable.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "server/config_file.h"
#include "tensor/dtype.h"

namespace llms {

template <typename T>
using Field = std::function<T&(ServeConfig&)>;

// What a secret key (secret_key) prints when it is set.
inline constexpr const char* kRedacted = "(redacted)";

// `s` as a TOML string literal (quoted, escaped).
std::string toml_string(const std::string& s);

ConfigKey int_key(std::string name, std::string help, Field<int> f, int lo, int hi);
// type kInt or kBytes (a byte size: "64MiB"); the value must be >= 0.
ConfigKey i64_key(std::string name, std::string help, Field<int64_t> f, ConfigType type);
// A memory size: bytes as for i64_key, or "NN%" of the machine's (or cgroup's) memory.
ConfigKey memory_key(std::string name, std::string help, Field<int64_t> f);
ConfigKey num_key(std::string name, std::string help, Field<double> f);
ConfigKey bool_key(std::string name, std::string help, Field<bool> f);
ConfigKey str_key(std::string name, std::string help, Field<std::string> f);
// A string that must never be printed: get() says only whether it is set.
ConfigKey secret_key(std::string name, std::string help, Field<std::string> f);
// A KV cache type (f32, f16, bf16, q8_0, q4_0).
ConfigKey dtype_key(std::string name, std::string help, Field<DType> f);

}  // namespace llms
