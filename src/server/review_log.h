// ReviewLog: a sample of finished requests written for people to read (docs/
// operations.md, "Review, feedback and task scores"). Each version draws its own
// sample — every finished request of a version is kept with probability `sample`,
// from a random stream of that version's own — so a canary's share of traffic is
// reviewed as much as the stable version's. A request that says "review": false, or
// that came with a key of --review-exclude-key-file, is never drawn.
//
// The log is JSON lines: {"type": "request", "time", "id", "version", "model",
// "kind", "messages" | "prompt", "answer", "finish_reason", "latency_s", "choice"}
// per choice of a sampled request, and {"type": "feedback", "time", "id", "version",
// "rating", "labels", "comment"} per rating (the feedback endpoint), so a reader joins
// answers and ratings by id. Every text passes the Redactor before it is written.
// When the file would pass max_bytes it is renamed FILE.1 (FILE.1 to FILE.2, ... up to
// `keep` old files) and a new one is started.
//
// Thread-safety: every member takes the internal mutex; any thread.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "deploy/feedback.h"
#include "server/redaction.h"

namespace llms {

struct ReviewOptions {
  double sample = 0;           // share of finished requests written, per version
  std::string path;            // the log
  std::string redact;          // regular expressions, one per line
  int64_t max_bytes = 64 << 20;
  int keep = 5;                // rotated files kept
  uint64_t seed = 0;           // 0: a random seed
};

// One choice of a sampled request.
struct ReviewRecord {
  std::string id;
  std::string version;
  std::string model;
  bool chat = false;
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completions
  std::string answer;
  std::string finish_reason;
  double latency_s = 0;
  int choice = 0;
};

struct ServerConfig;

class ReviewLog {
 public:
  // INVALID_ARGUMENT for a bad pattern or a sample outside [0, 1]; the file is opened
  // for appending (created when absent).
  static Result<std::unique_ptr<ReviewLog>> open(const ReviewOptions& options);

  // Whether this finished request of `version` is written (one draw per request).
  bool draw(const std::string& version);
  void write(const ReviewRecord& r);
  void write_feedback(const Feedback& f, const std::string& version);
  int64_t lines_written() const;

 private:
  ReviewLog(ReviewOptions options, Redactor redactor);
  void append(const std::string& line);  // under mu_
  void rotate();

  const ReviewOptions options_;
  const Redactor redactor_;
  mutable std::mutex mu_;
  std::ofstream out_;
  int64_t bytes_ = 0;
  int64_t lines_ = 0;
  uint64_t seed_;
  std::map<std::string, std::mt19937_64> streams_;  // per version
};

// The server's review log: null while review_sample is 0.
Result<std::unique_ptr<ReviewLog>> open_review_log(const ServerConfig& c);

}  // namespace llms
