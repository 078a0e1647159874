#include "server/server_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "base/clock.h"
#include "base/hash.h"
#include "server/vllm_metrics.h"

namespace llms {

ServerContext::ServerContext(VersionSet& v, Deployer& d, const ServeConfig& c, Registry& r, HttpMetrics& m,
                             std::string token)
    : versions(v),
      deployer(d),
      config(c),
      registry(r),
      metrics(m),
      model_name(served_model_name(c.server)),
      admin_token(std::move(token)),
      created(unix_seconds()),
      feedback(FeedbackConfig{c.server.feedback_scale == "stars" ? RatingScale::kStars : RatingScale::kThumbs,
                              static_cast<size_t>(c.server.feedback_recent)},
               r) {
  std::random_device rd;
  id_salt_ = (static_cast<uint64_t>(rd()) << 32) | rd();
  scope_secret_ = (static_cast<uint64_t>(rd()) << 32) | rd();
  grammars_ = std::make_unique<GrammarPool>(c.server.grammar_threads, c.server.grammar_queue, r);
}

uint64_t ServerContext::cache_salt(std::string_view authorization, std::string_view salt) const {
  const ServerConfig& s = config.server;
  const bool per_key = (!s.api_key.empty() || !s.api_key_file.empty()) && s.prefix_cache_scope == "key";
  std::string_view key;
  if (per_key) {
    // The router let the request in, so the header is "Bearer KEY" (any case, spaces around).
    key = authorization;
    while (!key.empty() && (key.front() == ' ' || key.front() == '\t')) key.remove_prefix(1);
    key.remove_prefix(std::min<size_t>(key.size(), 7));
    while (!key.empty() && (key.front() == ' ' || key.front() == '\t')) key.remove_prefix(1);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
  }
  if (key.empty() && salt.empty()) return 0;
  HashBuilder h;
  h.add_pod(scope_secret_).add_pod(key.size()).add(key).add(salt);
  const uint64_t v = h.finish64();
  return v == 0 ? 1 : v;
}

std::vector<std::string> ServerContext::model_names() const {
  std::vector<std::string> out{model_name};
  for (const OtherModel& m : other_models) out.push_back(m.name);
  return out;
}

bool ServerContext::names_default_model(std::string_view asked) const {
  return asked.empty() || asked == model_name ||
         std::find(default_aliases.begin(), default_aliases.end(), asked) != default_aliases.end();
}

const OtherModel* ServerContext::other_model(std::string_view asked) const {
  for (const OtherModel& m : other_models) {
    if (m.name == asked || std::find(m.aliases.begin(), m.aliases.end(), asked) != m.aliases.end()) return &m;
  }
  return nullptr;
}

namespace {

Result<VersionPtr> pinned_other(const OtherModel& m, const std::string& pinned) {
  if (pinned.empty() || pinned == m.version->name()) return m.version;
  return not_found(fmt::format("version '{}' is not loaded for model '{}'", pinned.substr(0, 200), m.name));
}

}  // namespace

bool ServerContext::pick_when_ready(std::string_view asked, const std::string& pinned, VersionSet::PickCallback done) {
  if (const OtherModel* m = other_model(asked)) {
    done(pinned_other(*m, pinned), true);
    return true;
  }
  return versions.pick_when_ready(pinned, std::move(done));
}

Result<VersionPtr> ServerContext::pick(std::string_view asked, const std::string& pinned) {
  if (const OtherModel* m = other_model(asked)) return pinned_other(*m, pinned);
  return versions.pick(pinned);
}

const std::string& ServerContext::model_of(const ServingVersion& v) const {
  for (const OtherModel& m : other_models) {
    if (m.version.get() == &v) return m.name;
  }
  return model_name;
}

std::string ServerContext::render_metrics() const {
  // With several models, each engine series carries its model's name too; with one,
  // the series are as they always were.
  const bool several = !other_models.empty();
  std::vector<ModelVersions> models{{model_name, versions.loaded()}};
  for (const OtherModel& m : other_models) models.push_back({m.name, {m.version}});
  std::vector<LabeledRegistry> parts{{&registry, {}}};
  for (const ModelVersions& m : models) {
    for (const VersionPtr& v : m.versions) {
      for (LabeledRegistry& part : v->labeled_registries()) {
        if (several) part.labels.insert(part.labels.begin(), {"model", m.model_name});
        parts.push_back(std::move(part));
      }
    }
  }
  std::string out = Registry::render_all(parts);
  if (config.server.metrics_compat == "vllm") out += render_vllm_metrics(models, loras->list().size());
  return out;
}

std::string ServerContext::next_id(const char* prefix) {
  const uint64_t n = next_id_.fetch_add(1);
  return fmt::format("{}{:016x}{:08x}", prefix, id_salt_ ^ (n * 0x9E3779B97F4A7C15ull), static_cast<uint32_t>(n));
}

void ServerContext::request_started() {
  std::lock_guard<std::mutex> lock(mu_);
  ++active_;
  metrics.active_requests.set(active_);
}

void ServerContext::request_finished() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
    metrics.active_requests.set(active_);
  }
  cv_.notify_all();
}

int ServerContext::active_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_;
}

bool ServerContext::wait_idle(int64_t deadline_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto left = std::chrono::nanoseconds(std::max<int64_t>(0, deadline_ns - now_ns()));
  return cv_.wait_for(lock, left, [&] { return active_ == 0; });
}

}  // namespace llms
