// Reading the review log (server/review_log.h) back for people: the sampled answers,
// each with the ratings given to its request id, filtered by version, finish reason
// or rating, as text to read or as CSV for a spreadsheet (`llmserve review`).
//
// Thread-safety: functions of their arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/json_util.h"

namespace llms {

struct ReviewEntry {
  Json request;                // a {"type": "request"} line
  std::vector<Json> feedback;  // the {"type": "feedback"} lines of its id
};

struct ReviewFilter {
  std::string version;               // "" = any
  std::string finish_reason;         // "" = any
  std::optional<int> rating;         // entries with a rating of this value
  size_t limit = 20;                 // at most this many, a uniform sample of those that match (0: all)
  uint64_t seed = 1;                 // of that sample
};

// The entries of `path` that pass `filter`, in file order. A line that is not JSON is
// an INVALID_ARGUMENT naming it.
Result<std::vector<ReviewEntry>> read_review_log(const std::string& path, const ReviewFilter& filter);

// time,id,version,finish_reason,latency_s,ratings,labels,comments,prompt,answer — one row per
// entry, fields quoted as RFC 4180 has it.
std::string review_csv(const std::vector<ReviewEntry>& entries);
// A block per entry for a person to read.
std::string review_text(const std::vector<ReviewEntry>& entries);

}  // namespace llms
