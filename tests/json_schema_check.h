// An independent JSON Schema validator for the tests: it checks a parsed value
// against a schema of the subset the grammar module supports, walking the value
// (nlohmann::json) and the schema together. It shares no code with
// grammar/json_schema*.cc, which lowers schemas into grammars; its regexes are
// std::regex (ECMAScript), not the grammar's regex front end; formats are checked by
// hand (calendar days, leap years included) or by std::regex.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace llms::test {

// "" when `value` is valid under `schema`, else the first problem and where it is.
std::string schema_violation(const nlohmann::ordered_json& schema, const nlohmann::json& value);

}  // namespace llms::test
