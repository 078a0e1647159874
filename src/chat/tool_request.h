// What a chat request asks of tools: the functions it offers (OpenAI `tools`),
// `tool_choice` and `parallel_tool_calls`. The server reads them from the request body
// (server/openai_request.h); the tool-call formats (tool_calls.h) render, constrain and
// parse calls by them.
//
// Thread-safety: plain values.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llms {

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ToolDefinition {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters;  // a JSON Schema (an empty object when the client sent none)
  nlohmann::ordered_json raw;         // the tool as the client sent it, for chat templates
};

struct ToolRequest {
  std::vector<ToolDefinition> tools;
  ToolChoice choice = ToolChoice::kNone;
  std::string named;      // kNamed: the function
  bool parallel = true;   // parallel_tool_calls
  bool active() const { return !tools.empty() && choice != ToolChoice::kNone; }
};

}  // namespace llms
