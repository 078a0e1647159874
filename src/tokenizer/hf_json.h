// Checked field access for the Hugging Face JSON files (tokenizer.json,
// tokenizer_config.json, generation_config.json): every read tests the type first and
// returns an error that names the field, so a malformed file is an error and never an
// exception or a crash. `where` is the path of the object ("pre_tokenizer.pretokenizers[1]").
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace llms::hfjson {

using Json = nlohmann::json;

// Parses `text`; an error (with the file name) when it is not JSON.
Result<Json> parse(std::string_view text, std::string_view file);

Status type_error(std::string_view where, std::string_view key, std::string_view expected);

// The member `key` of object `obj`, or nullptr when it is absent or null.
const Json* member(const Json& obj, std::string_view key);

Result<std::string> get_string(const Json& obj, std::string_view key, std::string_view where);
Result<std::optional<std::string>> get_opt_string(const Json& obj, std::string_view key, std::string_view where);
Result<bool> get_bool(const Json& obj, std::string_view key, bool fallback, std::string_view where);
Result<std::optional<int64_t>> get_opt_int(const Json& obj, std::string_view key, std::string_view where);
Result<std::optional<double>> get_opt_number(const Json& obj, std::string_view key, std::string_view where);

// A token id: an integer in [0, INT32_MAX).
Result<int32_t> to_id(const Json& v, std::string_view where);

}  // namespace llms::hfjson
