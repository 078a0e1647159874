// Streaming of tool calls: reads a choice's text as it grows and says what to send
// as OpenAI delta.tool_calls fragments — a call's head (index, name) as soon as its
// name is complete, then its arguments text piece by piece as it arrives.
//
// The text is the output of a tool-call grammar (tool_calls.h), so every call is
// {"name": "<f>", "arguments"|"parameters": <object>} in that order; the streamer
// only skips to the name, then to the arguments object, and follows the object's
// braces (outside strings) to its end. Text before the first call is the caller's
// business (tool_call_start / tool_call_hold_back).
//
// The arguments fragments are the model's text as written (whitespace included); put
// together they are the JSON object the whole response carries, reformatted there.
//
// Thread-safety: one streamer per choice, used by one thread at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace llms {

struct ToolCallDelta {
  int index = 0;          // the call's position in the answer
  bool head = false;      // true: the call starts here (name set, arguments empty)
  std::string name;       // head only
  std::string arguments;  // a fragment of the arguments text (not for heads)
};

class ToolCallStreamer {
 public:
  // `text` is the whole text from the first call's start on; each call passes the
  // text so far (it only grows). Returns the fragments the new bytes complete.
  std::vector<ToolCallDelta> feed(std::string_view text);
  int num_calls() const { return index_ + 1; }

 private:
  enum class State { kSeekName, kSeekArguments, kInArguments };
  State state_ = State::kSeekName;
  size_t pos_ = 0;     // bytes of the text consumed
  int index_ = -1;     // the current call
  int depth_ = 0;      // kInArguments: open braces and brackets
  bool in_string_ = false;
  bool escape_ = false;
};

}  // namespace llms
