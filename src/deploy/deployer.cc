#include "deploy/deployer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "base/memory.h"
#include "io/gguf_file.h"

namespace llms {
namespace {

constexpr int64_t kTickNs = 250'000'000;

// A one-token request through a freshly loaded version: pages in its weights and
// touches its code paths before traffic does.
Status warm_up(ServingVersion& v) {
  RequestParams p;
  p.prompt = {v.tokenizer().bos_id() >= 0 ? v.tokenizer().bos_id() : 0};
  p.max_tokens = 1;
  p.sampling.temperature = 0;
  LLMS_ASSIGN_OR_RETURN(auto h, v.engine().submit(p));
  for (RequestEvent ev;;) {
    if (!h->next(&ev, 600'000)) return unavailable("warm-up did not finish");
    if (const auto* f = std::get_if<FinishEvent>(&ev)) {
      if (f->reason == FinishReason::kError) return internal_error("warm-up failed: " + f->message);
      return ok_status();
    }
  }
}

}  // namespace

Result<SwapMode> parse_swap_mode(const std::string& name) {
  if (name == "auto") return SwapMode::kAuto;
  if (name == "beside") return SwapMode::kBeside;
  if (name == "drain") return SwapMode::kDrain;
  return invalid_argument(fmt::format("deploy_swap: '{}' is not auto, beside or drain", name));
}

const char* swap_mode_name(SwapMode m) {
  switch (m) {
    case SwapMode::kAuto: return "auto";
    case SwapMode::kBeside: return "beside";
    case SwapMode::kDrain: return "drain";
  }
  return "?";
}

Deployer::Deployer(std::unique_ptr<ModelRoot> root, VersionSet& versions, DeployConfig config, VersionSettings settings,
                   Registry& registry)
    : root_(std::move(root)),
      versions_(versions),
      config_(std::move(config)),
      settings_(std::move(settings)),
      deploys_(registry.counter_family("llmserve_deploys_total",
                                       "Deploys by result: switched, canary, refused_load, refused_tokenizer, "
                                       "refused_gate, refused.",
                                       {"result"})),
      canary_decisions_(registry.counter_family("llmserve_canary_decisions_total",
                                                "Automatic canary decisions: promoted, aborted.", {"decision"})),
      quality_decisions_(registry.counter_family(
          "llmserve_quality_decisions_total",
          "Automatic decisions on quality signals: promoted, aborted, rolled_back, by the signal that decided "
          "(quality, errors, latency, abnormal, feedback, drift; all_within_margins for a promotion).",
          {"decision", "reason"})),
      pool_(config_.threads) {}

Deployer::~Deployer() {
  stop();  // the thread reads the monitor: stopped first
  monitor_.reset();
}

void Deployer::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.clear();
}

void Deployer::start() {
  thread_ = std::thread([this] { thread_main(); });
  monitor_ = std::make_unique<QualityMonitor>(versions_, config_.cross, [this] { run([] {}); });
  if (config_.quality_interval_s > 0) {
    run([this] {
      record_deploy_quality(*versions_.current());
      check_quality();
    });
  }
}

void Deployer::run(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;  // stopped: `job` goes now, on the caller's thread
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

std::optional<DeployOutcome> Deployer::last_outcome() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

void Deployer::thread_main() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::nanoseconds(kTickNs), [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
    }
    if (job) {
      job();
      job = nullptr;  // what it holds (an HTTP exchange) goes now, not after the tick
    }
    tick();
  }
}

void Deployer::tick() {
  versions_.reap();
  decide_canary();
  if (config_.quality_interval_s > 0 &&
      now_ns() - last_quality_ns_ >= static_cast<int64_t>(config_.quality_interval_s * 1e9)) {
    check_quality();
  }
}

DeployOutcome Deployer::refuse(const std::string& version, const std::string& result, const std::string& message) {
  DeployOutcome o{false, version, result, message, {}};
  deploys_.with({result}).inc();
  log_warn("deploy of {} refused ({}): {}", version, result, message);
  // A version the deploy judged (load, tokenizer, gate) is marked for `versions --prune`.
  if (root_ && result != "refused" && root_->has_version(version)) {
    if (Status s = root_->mark(version, "refused", result + ": " + message); !s.ok()) log_warn("{}", s.to_string());
  }
  std::lock_guard<std::mutex> lock(mu_);
  last_ = o;
  return o;
}

AdmissionConfig Deployer::admission() const {
  return settings_.engine ? settings_.engine->admission : AdmissionConfig{};
}

int64_t Deployer::held_bytes(const ServingVersion* except) const {
  int64_t bytes = 0;
  for (const VersionPtr& v : versions_.loaded()) {
    if (v.get() != except) bytes += v->resident_bytes();
  }
  return bytes;
}

bool Deployer::fits_beside(const std::string& model_path) const {
  std::error_code ec;
  // An estimate before loading: with precision variants every one is resident, each
  // counted at the file's size (a variant wider than the file's own type takes more;
  // mapped weights take less). The candidate's KV pools are counted once it has loaded
  // (check_side_by_side()).
  const size_t n_variants = settings_.precision ? settings_.precision->variants.size() : 0;
  const auto variants = static_cast<int64_t>(std::max<size_t>(1, n_variants));
  const auto bytes = variants * static_cast<int64_t>(std::filesystem::file_size(model_path, ec));
  const AdmissionConfig a = admission();
  const int64_t limit = effective_memory_limit(a.memory_limit_bytes);
  return !ec && static_cast<double>(process_rss_bytes() + bytes) <= a.rss_high * static_cast<double>(limit);
}

Status Deployer::check_side_by_side(const ServingVersion& cand) const {
  const int64_t held = held_bytes(&cand), bytes = cand.resident_bytes();
  if (held + bytes <= admission().low_mark_bytes()) return ok_status();
  constexpr double kMiB = 1 << 20;
  return failed_precondition(fmt::format(
      "'{}' holds {:.1f} MiB of weights and KV cache and the loaded versions {:.1f} MiB: together they exceed {}",
      cand.name(), static_cast<double>(bytes) / kMiB, static_cast<double>(held) / kMiB,
      admission().describe_low_mark()));
}

DeployOutcome Deployer::deploy(const std::string& name, double canary_share) {
  if (!root_) return refuse(name, "refused", "this server was started on a file; deploys need --model-root");
  if (Status s = check_version_name(name); !s.ok()) return refuse(name, "refused", s.message());
  if (!root_->has_version(name)) {
    return refuse(name, "refused", fmt::format("no version '{}' in {} (llmserve deploy copies it there)", name, root_->dir()));
  }
  VersionPtr serving = versions_.current();
  if (serving->name() == name) return refuse(name, "refused", fmt::format("version '{}' is already serving", name));
  if (!(canary_share >= 0 && canary_share < 1)) return refuse(name, "refused", "canary must be in [0, 1)");
  VersionPtr v = versions_.previous();
  if (!v || v->name() != name) {  // the previous version, still loaded, needs no load
    const bool beside = config_.swap == SwapMode::kBeside ||
                        (config_.swap == SwapMode::kAuto && fits_beside(root_->model_path(name)));
    if (!beside) {
      if (canary_share > 0) {
        return refuse(name, "refused", "a canary needs both versions loaded, and they do not fit side by side");
      }
      return drain_and_swap(name, std::move(serving));
    }
    auto meta = read_version_meta(root_->meta_path(name));
    if (!meta.ok()) return refuse(name, "refused_load", meta.status().message());
    auto cand = ServingVersion::load({name, root_->model_path(name), *meta, settings_});
    if (!cand.ok()) return refuse(name, "refused_load", cand.status().message());
    v = std::move(cand).value();
    // Loaded, its KV pool is known: both versions must fit under the low mark together,
    // or the breaker would open under ordinary load with nothing it could release.
    if (Status s = check_side_by_side(*v); !s.ok()) {
      if (canary_share > 0) return refuse(name, "refused", "a canary needs both versions loaded: " + s.message());
      if (config_.swap == SwapMode::kBeside) return refuse(name, "refused", s.message() + " (deploy_swap = beside)");
      v.reset();
      return drain_and_swap(name, std::move(serving));
    }
  }
  if (!config_.gate.allow_tokenizer_change) {
    if (Status s = check_same_tokenizer(serving->tokenizer(), v->tokenizer()); !s.ok()) {
      return refuse(name, "refused_tokenizer", s.message() + " (allow it with --allow-tokenizer-change)");
    }
  }
  if (gate_tokens_.empty()) {
    auto t = gate_tokens(*serving, config_.gate);
    if (!t.ok()) return refuse(name, "refused_gate", "no gate text: " + t.status().message());
    gate_tokens_ = std::move(t).value();
  }
  auto g = run_gate(*serving, *v, gate_tokens_, config_.gate, pool_);
  if (!g.ok()) return refuse(name, "refused_gate", g.status().message());
  if (Status s = apply_task_gate(*v, config_.gate.task, &*g); !s.ok()) {
    return refuse(name, "refused_gate", "task scores: " + s.message());
  }
  v->set_gate(*g);
  if (!g->passed) {
    DeployOutcome o = refuse(name, "refused_gate", g->reason);
    o.gate = *g;
    return o;
  }
  if (Status s = warm_up(*v); !s.ok()) return refuse(name, "refused_load", s.message());
  record_deploy_quality(*v);
  if (canary_share <= 0) {
    const bool keep = config_.keep_previous &&
                      serving->resident_bytes() + v->resident_bytes() <= admission().low_mark_bytes();
    return switched(v, *g, keep, "");
  }
  versions_.start_canary(v, canary_share);
  if (feedback_) {
    feedback_start_ = {serving->name(), name, feedback_->stats(serving->name()).ratings, feedback_->stats(name).ratings};
  }
  DeployOutcome o{true, name, "canary", fmt::format("{} takes {:.0f}% of new requests; {}", name, 100 * canary_share,
                                                    g->reason), *g};
  deploys_.with({o.result}).inc();
  log_info("deploy of {}: {}", name, o.message);
  check_quality();
  std::lock_guard<std::mutex> lock(mu_);
  last_ = o;
  return o;
}

DeployOutcome Deployer::switched(VersionPtr v, const GateResult& g, bool keep_previous, const std::string& how) {
  const std::string name = v->name();
  if (versions_.paused()) {
    versions_.resume(std::move(v));
  } else {
    versions_.switch_to(std::move(v), keep_previous);
  }
  if (Status s = root_->switch_to(name); !s.ok()) log_error("deploy of {}: links not switched: {}", name, s.to_string());
  rollback_eligible_ = name;
  DeployOutcome o{true, name, "switched", fmt::format("{} serves{}; {}", name, how, g.reason), g};
  deploys_.with({o.result}).inc();
  log_info("deploy of {}: {}", name, o.message);
  check_quality();
  std::lock_guard<std::mutex> lock(mu_);
  last_ = o;
  return o;
}

// The two versions do not fit side by side: everything that needs the serving version
// (the tokenizer check, its log-probabilities on the gate text) is done first; then
// new requests are held, the running ones finish, the serving version is unloaded and
// the candidate loaded and gated against the recorded log-probabilities. A refused
// candidate is unloaded and the old version loaded again.
DeployOutcome Deployer::drain_and_swap(const std::string& name, VersionPtr serving) {
  const std::string path = root_->model_path(name);
  auto meta = read_version_meta(root_->meta_path(name));
  if (!meta.ok()) return refuse(name, "refused_load", meta.status().message());
  auto file = GgufFile::open(path);
  if (!file.ok()) return refuse(name, "refused_load", file.status().message());
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) return refuse(name, "refused_load", tok.status().message());
  if (!config_.gate.allow_tokenizer_change) {
    if (Status s = check_same_tokenizer(serving->tokenizer(), **tok); !s.ok()) {
      return refuse(name, "refused_tokenizer", s.message() + " (allow it with --allow-tokenizer-change)");
    }
  }
  if (gate_tokens_.empty()) {
    auto t = gate_tokens(*serving, config_.gate);
    if (!t.ok()) return refuse(name, "refused_gate", "no gate text: " + t.status().message());
    gate_tokens_ = std::move(t).value();
  }
  PerplexityOptions opts;
  opts.ctx = config_.gate.ctx;
  auto base = record_logprobs(gate_tokens_, {&serving->model(), serving->k_type(), serving->v_type()}, opts, pool_);
  if (!base.ok()) return refuse(name, "refused_gate", base.status().message());
  const VersionLoadOptions old{serving->name(), serving->model_path(), serving->meta(), settings_};
  tok->reset();
  file = unavailable("closed");
  log_info("deploy of {}: holding new requests while {} drains (the two do not fit side by side)", name, old.name);
  serving.reset();
  VersionPtr drained = versions_.pause();
  while (drained) {  // until the requests running on it have finished and let it go
    const EngineSnapshot s = drained->engine().snapshot();
    if (s.running == 0 && s.waiting == 0 && drained.use_count() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling the engine, on the deployer's thread
  }
  drained.reset();
  versions_.reap();
  auto restore = [&](const std::string& result, const std::string& why) {
    auto back = ServingVersion::load(old);
    if (back.ok()) {
      versions_.resume(std::move(back).value());
    } else {
      log_error("deploy of {}: {} could not be loaded again: {}; no version serves", name, old.name,
                back.status().to_string());
    }
    return refuse(name, result, why);
  };
  auto cand = ServingVersion::load({name, path, *meta, settings_});
  if (!cand.ok()) return restore("refused_load", cand.status().message());
  VersionPtr v = std::move(cand).value();
  auto g = run_gate_against(*base, old.name, *v, config_.gate, pool_);
  if (g.ok()) {
    if (Status s = apply_task_gate(*v, config_.gate.task, &*g); !s.ok()) g = s.with_context("task scores");
  }
  if (!g.ok() || !g->passed) {
    const std::string why = g.ok() ? g->reason : g.status().message();
    v.reset();
    DeployOutcome o = restore("refused_gate", why);
    if (g.ok()) o.gate = *g;
    return o;
  }
  v->set_gate(*g);
  if (Status s = warm_up(*v); !s.ok()) {
    v.reset();
    return restore("refused_load", s.message());
  }
  record_deploy_quality(*v);
  return switched(std::move(v), *g, false, " (drained and swapped: the two versions do not fit side by side)");
}

Status Deployer::promote() {
  const VersionPtr cand = versions_.candidate();
  if (!cand) return failed_precondition("no canary is running");
  LLMS_RETURN_IF_ERROR(versions_.promote(config_.keep_previous));
  if (root_) LLMS_RETURN_IF_ERROR(root_->switch_to(cand->name()));
  rollback_eligible_ = cand->name();
  log_info("promoted {}", cand->name());
  return ok_status();
}

Status Deployer::abort_canary() {
  const VersionPtr cand = versions_.candidate();
  LLMS_RETURN_IF_ERROR(versions_.abort());
  log_info("canary of {} aborted", cand ? cand->name() : "?");
  if (root_ && cand && root_->has_version(cand->name())) {
    if (Status s = root_->mark(cand->name(), "killed", "canary aborted"); !s.ok()) log_warn("{}", s.to_string());
  }
  return ok_status();
}

Status Deployer::rollback() {
  if (!versions_.previous()) {
    // Not loaded (the server started after the last deploy): load it.
    if (!root_ || !root_->previous()) return failed_precondition("there is no previous version to roll back to");
    const std::string name = *root_->previous();
    LLMS_ASSIGN_OR_RETURN(VersionMeta meta, read_version_meta(root_->meta_path(name)));
    LLMS_ASSIGN_OR_RETURN(VersionPtr v, ServingVersion::load({name, root_->model_path(name), meta, settings_}));
    versions_.switch_to(v, config_.keep_previous);
  } else {
    LLMS_RETURN_IF_ERROR(versions_.rollback());
  }
  if (root_) LLMS_RETURN_IF_ERROR(root_->rollback());
  rollback_eligible_.clear();  // never back and forth on its own
  log_info("rolled back to {}", versions_.current()->name());
  return ok_status();
}

}  // namespace llms
