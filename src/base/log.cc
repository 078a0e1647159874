#include "base/log.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace llms {
namespace {

constexpr std::string_view kLevelNames[] = {"debug", "info", "warn", "error", "off"};

LogLevel level_from_env() {
  const char* env = std::getenv("LLMSERVE_LOG");
  if (env == nullptr) return LogLevel::kInfo;
  return parse_log_level(env).value_or(LogLevel::kInfo);
}

std::atomic<LogLevel>& level_ref() {
  static std::atomic<LogLevel> level{level_from_env()};
  return level;
}

std::atomic<LogFormat>& format_ref() {
  static std::atomic<LogFormat> format{LogFormat::kText};
  return format;
}

// The destination: stderr, or a file opened by set_log_file().
struct Sink {
  std::mutex mu;
  std::string path;
  FILE* file = nullptr;
  FILE* out() { return file ? file : stderr; }
};

Sink& sink() {
  static Sink s;
  return s;
}

Status open_sink(Sink& s, const std::string& path) {
  FILE* f = nullptr;
  if (!path.empty()) {
    f = std::fopen(path.c_str(), "a");
    if (f == nullptr) return unavailable(fmt::format("cannot open log file '{}' for appending", path));
  }
  if (s.file) std::fclose(s.file);
  s.file = f;
  s.path = path;
  return ok_status();
}

}  // namespace

void set_log_level(LogLevel level) { level_ref().store(level); }
LogLevel log_level() { return level_ref().load(std::memory_order_relaxed); }
void set_log_format(LogFormat format) { format_ref().store(format); }
LogFormat log_format() { return format_ref().load(std::memory_order_relaxed); }

std::optional<LogLevel> parse_log_level(std::string_view name) {
  for (size_t i = 0; i < std::size(kLevelNames); ++i) {
    if (name == kLevelNames[i]) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

std::string_view log_level_name(LogLevel level) { return kLevelNames[static_cast<size_t>(level)]; }

std::optional<LogFormat> parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return std::nullopt;
}

Status set_log_file(const std::string& path) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  return open_sink(s, path);
}

Status reopen_log_file() {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  return open_sink(s, s.path);
}

std::string iso8601(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

void log_line(LogLevel level, std::string_view text) {
  const std::string time = iso8601(std::chrono::system_clock::now());
  std::string line;
  if (log_format() == LogFormat::kJson) {
    line = fmt::format("{{\"time\":\"{}\",\"level\":\"{}\",\"msg\":\"{}\"}}\n", time, log_level_name(level),
                       json_escape(text));
  } else {
    const char tag = static_cast<char>(std::toupper(static_cast<unsigned char>(log_level_name(level)[0])));
    line = fmt::format("[{} {}] {}\n", tag, time, text);
  }
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  std::fwrite(line.data(), 1, line.size(), s.out());
  std::fflush(s.out());
}

}  // namespace llms
