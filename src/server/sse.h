// Server-Sent Events framing as the OpenAI streaming API uses it: one `data: <json>`
// event per chunk, a blank line after each, and `data: [DONE]` at the end.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "server/json_util.h"

namespace llms {

inline std::string sse_event(const Json& j) { return "data: " + dump_json(j) + "\n\n"; }
inline std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace llms
