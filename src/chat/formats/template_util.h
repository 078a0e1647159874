// What several hand-written template families share: Python's str.strip(), the
// leading system message split off, and the alternation check the published templates
// raise. Internal to chat/formats.
//
// Thread-safety: pure functions.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/formats/format.h"

namespace llms::chat {

inline constexpr std::string_view kAlternate = "Conversation roles must alternate user/assistant/user/assistant/...";

// Python's str.strip() (Jinja's `trim`): removes Unicode whitespace at both ends.
std::string strip(std::string_view s);

// Appends the parts in order (no temporaries; also sidesteps a GCC 12 -Wrestrict
// false positive on chains of std::string operator+).
void append(std::string& out, std::initializer_list<std::string_view> parts);

// Whether `src` holds `marker`.
inline bool has(std::string_view src, std::string_view marker) { return src.find(marker) != std::string_view::npos; }

// A leading system message is taken out of the loop by most templates.
struct SystemSplit {
  bool has_system = false;
  std::string_view system;
  std::span<const ChatMessage> rest;
};

SystemSplit split_system(const Messages& m);

// The published templates raise an exception unless user and assistant take turns,
// starting with the user. `skip_tools` leaves tool messages out of the count.
Status check_alternation(std::span<const ChatMessage> msgs, std::string_view message, bool skip_tools = false);

}  // namespace llms::chat
