// A strict schema of the OpenAI API objects the server returns, written from the
// published API reference: required fields with their types, optional fields, and
// nothing else (an unknown field is an error, as a generated SDK type would see it).
// Each check returns the list of violations; empty means the object conforms.
//
// finish_reason accepts the reference's values plus this server's documented
// extensions "timeout" and "cancelled".
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llms::test {

using Violations = std::vector<std::string>;

Violations check_completion(const nlohmann::json& j);        // object "text_completion" (whole)
Violations check_completion_chunk(const nlohmann::json& j);  // "text_completion" streamed chunk
Violations check_chat_completion(const nlohmann::json& j);   // "chat.completion"
Violations check_chat_chunk(const nlohmann::json& j);        // "chat.completion.chunk"
Violations check_error(const nlohmann::json& j);             // {"error": {...}}
Violations check_model_list(const nlohmann::json& j);        // GET /v1/models
Violations check_model(const nlohmann::json& j);             // one model object

}  // namespace llms::test
