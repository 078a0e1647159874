#include "deploy/version_set.h"

#include <fmt/format.h>

#include <algorithm>

namespace llms {

VersionSet::VersionSet(VersionPtr current) : current_(std::move(current)) {}

Result<VersionPtr> VersionSet::pick(const std::string& pinned) {
  std::lock_guard<std::mutex> lock(mu_);
  return pick_locked(pinned);
}

bool VersionSet::pick_when_ready(const std::string& pinned, PickCallback done) {
  Result<VersionPtr> now = unavailable("");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (paused_) {
      held_.emplace_back(pinned, std::move(done));
      return false;
    }
    now = pick_locked(pinned);
  }
  done(std::move(now), true);
  return true;
}

VersionPtr VersionSet::pause() {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = true;
  retire(std::move(previous_));
  retire(std::move(candidate_));
  return std::move(current_);
}

bool VersionSet::paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

void VersionSet::resume(VersionPtr v) {
  std::vector<std::pair<std::string, PickCallback>> held;
  std::vector<Result<VersionPtr>> answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(v);
    paused_ = false;
    credit_ = 0;
    canary_requests_ = current_requests_ = 0;
    held.swap(held_);
    for (auto& [pinned, cb] : held) answers.push_back(pick_locked(pinned));
  }
  for (size_t i = 0; i < held.size(); ++i) held[i].second(std::move(answers[i]), false);
}

Result<VersionPtr> VersionSet::pick_locked(const std::string& pinned) {
  if (!current_) return unavailable("a model version swap is in progress; retry shortly");
  if (!pinned.empty()) {
    for (const VersionPtr& v : {current_, candidate_, previous_}) {
      if (v && v->name() == pinned) return v;
    }
    // The loaded names are not listed: a client that may not use the admin API should
    // not learn them (GET /admin/versions lists them for the operator).
    return not_found(fmt::format("version '{}' is not loaded (GET /admin/versions lists the loaded ones)",
                                 pinned.substr(0, 200)));
  }
  if (candidate_) {
    credit_ += share_;
    if (credit_ >= 1.0) {
      credit_ -= 1.0;
      ++canary_requests_;
      return candidate_;
    }
  }
  ++current_requests_;
  return current_;
}

VersionPtr VersionSet::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

VersionPtr VersionSet::candidate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return candidate_;
}

VersionPtr VersionSet::previous() const {
  std::lock_guard<std::mutex> lock(mu_);
  return previous_;
}

std::vector<VersionPtr> VersionSet::loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<VersionPtr> out;
  if (current_) out.push_back(current_);
  if (candidate_) out.push_back(candidate_);
  if (previous_) out.push_back(previous_);
  return out;
}

VersionSetState VersionSet::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  VersionSetState s;
  if (current_) s.current = current_->name();
  if (previous_) s.previous = previous_->name();
  if (candidate_) s.candidate = candidate_->name();
  s.canary_share = candidate_ ? share_ : 0;
  for (const VersionPtr& v : {current_, candidate_, previous_}) {
    if (v) s.loaded.push_back(v->name());
  }
  s.swapping = paused_;
  s.canary_requests = canary_requests_;
  s.current_requests = current_requests_;
  return s;
}

void VersionSet::retire(VersionPtr v) {
  if (v) retired_.push_back(std::move(v));
}

void VersionSet::switch_to(VersionPtr v, bool keep_previous) {
  std::lock_guard<std::mutex> lock(mu_);
  if (candidate_ == v) candidate_.reset();
  if (previous_ == v) previous_.reset();
  retire(std::move(previous_));
  previous_ = std::move(current_);
  if (!keep_previous) retire(std::move(previous_));
  current_ = std::move(v);
  credit_ = 0;
  canary_requests_ = current_requests_ = 0;
}

void VersionSet::start_canary(VersionPtr v, double share) {
  std::lock_guard<std::mutex> lock(mu_);
  if (previous_ == v) previous_.reset();  // the previous version comes back as the candidate
  retire(std::move(candidate_));
  candidate_ = std::move(v);
  share_ = share;
  credit_ = 0;
  canary_requests_ = current_requests_ = 0;
}

Status VersionSet::promote(bool keep_previous) {
  VersionPtr cand;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!candidate_) return failed_precondition("no canary is running");
    cand = candidate_;
  }
  switch_to(std::move(cand), keep_previous);
  return ok_status();
}

Status VersionSet::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!candidate_) return failed_precondition("no canary is running");
  retire(std::move(candidate_));
  credit_ = 0;
  return ok_status();
}

Status VersionSet::rollback() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!previous_) return failed_precondition("no previous version is loaded");
  std::swap(current_, previous_);
  retire(std::move(candidate_));
  credit_ = 0;
  canary_requests_ = current_requests_ = 0;
  return ok_status();
}

int VersionSet::reap() {
  std::vector<VersionPtr> dead;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::partition(retired_.begin(), retired_.end(), [](const VersionPtr& v) { return v.use_count() > 1; });
    dead.assign(std::make_move_iterator(it), std::make_move_iterator(retired_.end()));
    retired_.erase(it, retired_.end());
  }
  return static_cast<int>(dead.size());  // engines stop here, outside the lock
}

}  // namespace llms
