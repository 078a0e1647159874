// Leveled logging, to stderr or a file. The level comes from LLMSERVE_LOG (debug,
// info, warn, error, off; default info) or set_log_level(); lines are text
// (`[I 2026-12-06T16:20:01.123Z] message`) or JSON objects, one a line
// (`{"time":"...","level":"info","msg":"..."}`), with ISO-8601 UTC timestamps.
//
// Thread-safety: every function may be called from any thread; lines never interleave.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace llms {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };
enum class LogFormat { kText, kJson };

void set_log_level(LogLevel level);
LogLevel log_level();
void set_log_format(LogFormat format);
LogFormat log_format();
// "debug", "info", "warn", "error", "off"; nullopt for anything else.
std::optional<LogLevel> parse_log_level(std::string_view name);
std::string_view log_level_name(LogLevel level);
// "text" or "json".
std::optional<LogFormat> parse_log_format(std::string_view name);
// Appends log lines to `path` ("" = stderr). reopen_log_file() closes and opens the
// same path again (after a rotation moved it away; SIGHUP).
Status set_log_file(const std::string& path);
Status reopen_log_file();

// UTC with milliseconds: 2026-12-06T16:20:01.123Z.
std::string iso8601(std::chrono::system_clock::time_point t);
// `text` as the inside of a JSON string (quotes, backslashes and control characters escaped).
std::string json_escape(std::string_view text);

void log_line(LogLevel level, std::string_view text);

template <typename... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kWarn) log_line(LogLevel::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_error(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kError) log_line(LogLevel::kError, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace llms
