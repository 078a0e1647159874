#include "deploy/feedback.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "base/hash.h"

namespace llms {
namespace {

bool valid_label(const std::string& l) {
  if (l.empty() || l.size() > 32) return false;
  return std::all_of(l.begin(), l.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
}

bool is_negative(RatingScale s, int rating) { return s == RatingScale::kThumbs ? rating < 0 : rating <= 2; }

}  // namespace

Result<RatingScale> parse_rating_scale(const std::string& name) {
  if (name == "thumbs") return RatingScale::kThumbs;
  if (name == "stars") return RatingScale::kStars;
  return invalid_argument(fmt::format("unknown rating scale '{}' (thumbs: -1, 0, 1; stars: 1 to 5)", name));
}

const char* rating_scale_name(RatingScale s) { return s == RatingScale::kThumbs ? "thumbs" : "stars"; }

FeedbackBook::FeedbackBook(FeedbackConfig config, Registry& registry)
    : config_(config),
      ratings_(registry.counter_family("llmserve_feedback_ratings_total",
                                       "Ratings of answers received, by version and rating value", {"version", "rating"})),
      rating_mean_(registry.gauge_family("llmserve_feedback_rating_mean", "Mean rating of answers, by version",
                                         {"version"})),
      labels_(registry.counter_family("llmserve_feedback_labels_total",
                                      "Labels people put on answers (complaint, ...), by version", {"version", "label"})),
      seed_(std::random_device{}() * 0x9E3779B97F4A7C15ULL ^ std::random_device{}()) {}

uint64_t FeedbackBook::digest(const std::string& text) const { return hash64(text.data(), text.size(), seed_); }

void FeedbackBook::remember(const std::string& request_id, const std::string& version) {
  const uint64_t id = digest(request_id);
  std::lock_guard<std::mutex> lock(mu_);
  auto v = std::find(versions_.begin(), versions_.end(), version);
  if (v == versions_.end()) v = versions_.insert(versions_.end(), version);
  if (!recent_.emplace(id, Recent{static_cast<uint32_t>(v - versions_.begin()), {}}).second) return;
  order_.push_back(id);
  while (order_.size() > std::max<size_t>(1, config_.recent_requests)) {
    recent_.erase(order_.front());
    order_.pop_front();
  }
}

Status FeedbackBook::check(const Feedback& f) const {
  const bool on_scale = config_.scale == RatingScale::kThumbs ? f.rating >= -1 && f.rating <= 1
                                                             : f.rating >= 1 && f.rating <= 5;
  if (!on_scale) {
    return invalid_argument(fmt::format("rating {} is off the {} scale ({})", f.rating, rating_scale_name(config_.scale),
                                        config_.scale == RatingScale::kThumbs ? "-1, 0 or 1" : "1 to 5"));
  }
  if (f.labels.size() > kMaxLabels) return invalid_argument(fmt::format("at most {} labels", kMaxLabels));
  for (const std::string& l : f.labels) {
    if (!valid_label(l)) return invalid_argument(fmt::format("label '{}' must be 1-32 of a-z, 0-9, _ and -", l));
  }
  if (f.comment.size() > kMaxCommentBytes) return invalid_argument(fmt::format("comment over {} bytes", kMaxCommentBytes));
  return ok_status();
}

Result<std::string> FeedbackBook::record(const Feedback& f) {
  LLMS_RETURN_IF_ERROR(check(f));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = recent_.find(digest(f.request_id));
  if (it == recent_.end()) {
    return not_found(fmt::format("no recent request '{}' to rate (ids are kept for the last {} requests)", f.request_id,
                                 config_.recent_requests));
  }
  std::vector<uint64_t>& raters = it->second.raters;
  const uint64_t rater = digest(f.rater);
  if (std::find(raters.begin(), raters.end(), rater) != raters.end()) {
    return already_exists(fmt::format("request '{}' was already rated with this key", f.request_id));
  }
  raters.push_back(rater);
  const std::string& version = versions_[it->second.version];
  VersionFeedback& v = per_version_[version];
  v.ratings.add(f.rating);
  v.negative += is_negative(config_.scale, f.rating) ? 1 : 0;
  ratings_.with({version, std::to_string(f.rating)}).inc();
  rating_mean_.with({version}).set(v.mean());
  for (const std::string& asked : std::set<std::string>(f.labels.begin(), f.labels.end())) {
    const bool known = label_names_.count(asked) > 0 || label_names_.size() < config_.max_label_names;
    const std::string label = known ? asked : "other";
    if (known) label_names_.insert(asked);
    ++v.labels[label];
    labels_.with({version, label}).inc();
  }
  return version;
}

CanarySignal feedback_signal(const MeanStream& candidate, const MeanStream& stable, double margin, int64_t min_ratings) {
  return {"feedback", candidate.negated(), stable.negated(), margin, false, min_ratings};
}

VersionFeedback FeedbackBook::stats(const std::string& version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_version_.find(version);
  return it == per_version_.end() ? VersionFeedback{} : it->second;
}

}  // namespace llms
