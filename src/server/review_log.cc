#include "server/review_log.h"

#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include "base/clock.h"
#include "base/hash.h"
#include "server/json_util.h"
#include "server/server_config.h"

namespace llms {
namespace {

std::string utc_now() {
  const int64_t ms = unix_ms();
  const std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms % 1000));
}

}  // namespace

Result<std::unique_ptr<ReviewLog>> ReviewLog::open(const ReviewOptions& options) {
  if (!(options.sample >= 0 && options.sample <= 1)) return invalid_argument("review_sample must be in [0, 1]");
  if (options.path.empty()) return invalid_argument("review_sample needs review_log (the file to write)");
  LLMS_ASSIGN_OR_RETURN(Redactor redactor, Redactor::make(options.redact));
  std::unique_ptr<ReviewLog> log(new ReviewLog(options, std::move(redactor)));
  log->out_.open(options.path, std::ios::app | std::ios::binary);
  if (!log->out_) return invalid_argument(fmt::format("review_log: cannot open '{}' for writing", options.path));
  std::error_code ec;
  const auto size = std::filesystem::file_size(options.path, ec);
  log->bytes_ = ec ? 0 : static_cast<int64_t>(size);
  return log;
}

ReviewLog::ReviewLog(ReviewOptions options, Redactor redactor)
    : options_(std::move(options)), redactor_(std::move(redactor)),
      seed_(options_.seed != 0 ? options_.seed : std::random_device{}()) {}

bool ReviewLog::draw(const std::string& version) {
  if (options_.sample <= 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(version);
  if (it == streams_.end()) it = streams_.emplace(version, std::mt19937_64(seed_ ^ hash64(version.data(), version.size()))).first;
  return std::uniform_real_distribution<double>(0, 1)(it->second) < options_.sample;
}

void ReviewLog::write(const ReviewRecord& r) {
  Json j = {{"type", "request"}, {"time", utc_now()}, {"id", r.id}, {"version", r.version}, {"model", r.model},
            {"kind", r.chat ? "chat" : "completion"}};
  if (r.chat) {
    Json messages = Json::array();
    for (const ChatMessage& m : r.messages) messages.push_back({{"role", m.role}, {"content", redactor_.apply(m.content)}});
    j["messages"] = std::move(messages);
  } else {
    j["prompt"] = redactor_.apply(r.prompt);
  }
  j["answer"] = redactor_.apply(r.answer);
  j["finish_reason"] = r.finish_reason;
  j["latency_s"] = r.latency_s;
  j["choice"] = r.choice;
  std::lock_guard<std::mutex> lock(mu_);
  append(dump_json(j));
}

void ReviewLog::write_feedback(const Feedback& f, const std::string& version) {
  Json j = {{"type", "feedback"}, {"time", utc_now()},  {"id", f.request_id},
            {"version", version}, {"rating", f.rating}, {"labels", f.labels},
            {"comment", redactor_.apply(f.comment)}};
  std::lock_guard<std::mutex> lock(mu_);
  append(dump_json(j));
}

Result<std::unique_ptr<ReviewLog>> open_review_log(const ServerConfig& c) {
  if (c.review_sample <= 0) return std::unique_ptr<ReviewLog>();
  ReviewOptions o;
  o.sample = c.review_sample;
  o.path = c.review_log;
  o.redact = c.review_redact;
  o.max_bytes = c.review_log_max_bytes;
  o.keep = c.review_log_keep;
  o.seed = static_cast<uint64_t>(c.review_seed);
  return ReviewLog::open(o);
}

int64_t ReviewLog::lines_written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

void ReviewLog::append(const std::string& line) {
  const int64_t n = static_cast<int64_t>(line.size()) + 1;
  if (bytes_ > 0 && bytes_ + n > options_.max_bytes) rotate();
  out_ << line << '\n';
  out_.flush();
  bytes_ += n;
  ++lines_;
}

void ReviewLog::rotate() {
  out_.close();
  const std::string& p = options_.path;
  std::error_code ec;
  if (options_.keep <= 0) {
    std::filesystem::remove(p, ec);
  } else {
    std::filesystem::remove(fmt::format("{}.{}", p, options_.keep), ec);
    for (int i = options_.keep - 1; i >= 1; --i) std::filesystem::rename(fmt::format("{}.{}", p, i), fmt::format("{}.{}", p, i + 1), ec);
    std::filesystem::rename(p, p + ".1", ec);
  }
  out_.open(p, std::ios::trunc | std::ios::binary);
  bytes_ = 0;
}

}  // namespace llms
