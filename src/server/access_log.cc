#include "server/access_log.h"

#include <fmt/format.h>

#include <chrono>

#include "base/log.h"

namespace llms {

Result<std::unique_ptr<AccessLog>> AccessLog::open(const std::string& path) {
  std::unique_ptr<AccessLog> log(new AccessLog(path));
  LLMS_RETURN_IF_ERROR(log->reopen());
  return log;
}

AccessLog::~AccessLog() {
  if (file_) std::fclose(file_);
}

Status AccessLog::reopen() {
  FILE* f = std::fopen(path_.c_str(), "a");
  if (f == nullptr) return unavailable(fmt::format("access_log: cannot open '{}' for appending", path_));
  std::lock_guard<std::mutex> lock(mu_);
  if (file_) std::fclose(file_);
  file_ = f;
  return ok_status();
}

void AccessLog::write(const HttpExchangeRecord& r, std::string_view endpoint) {
  const std::string version = r.header_value.empty() ? "" : fmt::format("\"{}\"", json_escape(r.header_value));
  std::string line = fmt::format(
      "{{\"time\":\"{}\",\"endpoint\":\"{}\",\"method\":\"{}\",\"version\":{},\"status\":{},\"total_s\":{:.6f},"
      "\"client_gone\":{}",
      iso8601(std::chrono::system_clock::now()), json_escape(endpoint), json_escape(r.method),
      version.empty() ? "null" : version, r.status, r.seconds, r.client_gone ? "true" : "false");
  line += r.note.empty() ? ",\"request_id\":null" : "," + r.note;
  line += "}\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

std::string access_note(std::string_view request_id, int64_t prompt_tokens, int64_t output_tokens, double ttft_s,
                        std::string_view finish_reasons) {
  return fmt::format(
      "\"request_id\":\"{}\",\"prompt_tokens\":{},\"output_tokens\":{},\"ttft_s\":{},\"finish_reason\":\"{}\"",
      json_escape(request_id), prompt_tokens, output_tokens, ttft_s >= 0 ? fmt::format("{:.6f}", ttft_s) : "null",
      json_escape(finish_reasons));
}

}  // namespace llms
