// FeedbackBook: people's ratings of answers, per version. The server remembers which
// version answered each recent request (a bounded window of request ids); a rating
// names the request id, and counts for that version: ratings count, sum and mean,
// and label counters (`complaint`, ...). One rating per request id and API key.
//
// The figures are Prometheus series of the registry it is given —
// llmserve_feedback_ratings_total{version,rating} (one counter per rating value),
// llmserve_feedback_rating_mean{version}, llmserve_feedback_labels_total{version,label}
// — and, for decisions (a canary judged on its feedback: feedback_signal below),
// stats(version) returns the same numbers as values.
//
// Thread-safety: every member takes the internal mutex; any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "deploy/canary_judge.h"
#include "metrics/metrics.h"

namespace llms {

// Which ratings are valid: thumbs -1 / 0 / +1, or stars 1..5.
enum class RatingScale { kThumbs, kStars };
Result<RatingScale> parse_rating_scale(const std::string& name);
const char* rating_scale_name(RatingScale s);

struct FeedbackConfig {
  RatingScale scale = RatingScale::kThumbs;
  size_t recent_requests = 100000;  // request ids remembered (oldest forgotten first), ~80 bytes each
  size_t max_label_names = 32;      // distinct labels counted; later ones count as "other"
};

struct Feedback {
  std::string request_id;
  int rating = 0;
  std::vector<std::string> labels;  // [a-z0-9_-]{1,32}, at most kMaxLabels
  std::string comment;
  std::string rater;                // who rates (a digest of the API key; "" without keys)
};

// One version's feedback so far.
struct VersionFeedback {
  MeanStream ratings;    // every rating: count (n), mean and variance
  int64_t negative = 0;  // thumbs -1, or stars 1-2
  std::map<std::string, int64_t> labels;
  int64_t count() const { return ratings.n; }
  double mean() const { return ratings.mean; }
  double negative_share() const { return ratings.n > 0 ? static_cast<double>(negative) / ratings.n : 0; }
};

// The canary decision's feedback signal (canary_judge.h): each side's ratings received
// since the comparison began, negated so that higher is worse: the candidate is worse
// when its mean rating is lower than the stable version's by more than `margin` (in
// rating points) with confidence, and no worse when it is shown within the margin.
// Undecided until each side has `min_ratings`.
CanarySignal feedback_signal(const MeanStream& candidate, const MeanStream& stable, double margin, int64_t min_ratings);

class FeedbackBook {
 public:
  static constexpr size_t kMaxLabels = 8;
  static constexpr size_t kMaxCommentBytes = 4096;

  FeedbackBook(FeedbackConfig config, Registry& registry);

  // A finished request `request_id` answered by `version` may now be rated.
  void remember(const std::string& request_id, const std::string& version);
  // Counts `f` for the version that answered; the version's name. NOT_FOUND for an id
  // not (or no longer) remembered, ALREADY_EXISTS when this rater rated it already,
  // INVALID_ARGUMENT for a rating off the scale or a malformed label.
  Result<std::string> record(const Feedback& f);
  VersionFeedback stats(const std::string& version) const;
  const FeedbackConfig& config() const { return config_; }

 private:
  // A remembered request: the version that answered (an index into versions_) and
  // the digests of the raters who rated it (usually none). Ids are held as keyed
  // 64-bit digests: a window of 100,000 takes a few MB, not tens.
  struct Recent {
    uint32_t version = 0;
    std::vector<uint64_t> raters;
  };
  Status check(const Feedback& f) const;
  uint64_t digest(const std::string& text) const;

  const FeedbackConfig config_;
  Family<Counter>& ratings_;
  Family<Gauge>& rating_mean_;
  Family<Counter>& labels_;

  mutable std::mutex mu_;
  const uint64_t seed_;            // keys the digests: ids cannot be chosen to collide
  std::deque<uint64_t> order_;     // remembered ids' digests, oldest first
  std::unordered_map<uint64_t, Recent> recent_;
  std::vector<std::string> versions_;  // the names Recent::version indexes
  std::map<std::string, VersionFeedback> per_version_;
  std::set<std::string> label_names_;
};

}  // namespace llms
