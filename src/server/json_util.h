// JSON helpers shared by the server: the Json type, dumping that never throws on
// invalid UTF-8 (model output may split a character; user text may carry anything),
// and typed field readers for request bodies that name the offending parameter.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace llms {

// Ordered: objects keep the order of their keys, as clients wrote them (a JSON
// Schema's properties, tool definitions a chat template renders) and as OpenAI writes
// responses.
using Json = nlohmann::ordered_json;

// Compact JSON text; invalid UTF-8 becomes U+FFFD instead of an exception.
std::string dump_json(const Json& j);

// Parses a request body that must be a JSON object.
std::optional<ApiError> parse_json_object(const std::string& body, Json* out);

// Returns the ApiError of `expr` (an std::optional<ApiError>) when it has one.
#define LLMS_API_TRY(expr)           \
  do {                               \
    if (auto _e = (expr)) return _e; \
  } while (0)

// Typed readers of an optional field of `obj`. Absent or null leaves *out unchanged
// and returns nullopt; a wrong type or a value outside [lo, hi] is a 400 naming `key`.
std::optional<ApiError> read_bool(const Json& obj, const char* key, bool* out);
std::optional<ApiError> read_int(const Json& obj, const char* key, int64_t lo, int64_t hi, int64_t* out);
std::optional<ApiError> read_number(const Json& obj, const char* key, double lo, double hi, double* out);
std::optional<ApiError> read_string(const Json& obj, const char* key, std::string* out);
// True when `key` is present and not null.
bool has_field(const Json& obj, const char* key);
// Lenient reads of a client's field that never throw (Json::value() throws when the
// field has another type): the string at `key`; `fallback` when `obj` is not an
// object or the field is absent or null; "" when it is not a string (no field read
// this way accepts "", so the caller's check answers 400).
std::string string_field(const Json& obj, const char* key, const std::string& fallback = "");
// The bool at `key`; false when absent, null or not a bool (the request's parser
// then refuses a non-bool with a 400 naming it).
bool bool_field(const Json& obj, const char* key);

}  // namespace llms
