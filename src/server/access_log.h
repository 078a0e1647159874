// AccessLog: one JSON object a line for every HTTP exchange the server ends — time
// (ISO-8601 UTC, when it ended), request id (the completion's id; null for other
// endpoints), endpoint, method, version that answered, status, prompt and output
// tokens, time to first token, total time, finish reason(s), and whether the client
// left first. Completion handlers attach their part through HttpExchange::set_note().
//
// Thread-safety: write() and reopen() from any thread (an internal mutex).
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/status.h"
#include "server/http_types.h"

namespace llms {

class AccessLog {
 public:
  // Appends to `path` (created when missing).
  static Result<std::unique_ptr<AccessLog>> open(const std::string& path);
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  const std::string& path() const { return path_; }
  // Closes and opens the path again (after a rotation moved the file away).
  Status reopen();
  void write(const HttpExchangeRecord& r, std::string_view endpoint);

 private:
  explicit AccessLog(std::string path) : path_(std::move(path)) {}

  const std::string path_;
  std::mutex mu_;
  FILE* file_ = nullptr;
};

// The completion's part of its access-log line, as HttpExchange::set_note() carries it:
// the members of a JSON object, without braces.
std::string access_note(std::string_view request_id, int64_t prompt_tokens, int64_t output_tokens, double ttft_s,
                        std::string_view finish_reasons);

}  // namespace llms
