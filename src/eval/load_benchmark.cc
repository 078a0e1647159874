#include "eval/load_benchmark.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/random.h"
#include "engine/engine.h"

namespace llms {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::vector<RequestParams> make_load_requests(const LoadSpec& spec, int vocab) {
  Rng rng(spec.seed);
  std::vector<RequestParams> out;
  for (int i = 0; i < spec.requests; ++i) {
    RequestParams p;
    const int len = spec.prompt_min + static_cast<int>(rng.below(spec.prompt_max - spec.prompt_min + 1));
    p.prompt.push_back(1);
    for (int t = 1; t < len; ++t) p.prompt.push_back(3 + static_cast<int32_t>(rng.below(vocab - 3)));
    if (spec.output_log_uniform) {
      const double lo = std::log(spec.output_min), hi = std::log(spec.output_max + 1.0);
      p.max_tokens = std::min(spec.output_max, static_cast<int>(std::exp(lo + (hi - lo) * rng.uniform())));
    } else {
      p.max_tokens = spec.output_min + static_cast<int>(rng.below(spec.output_max - spec.output_min + 1));
    }
    p.ignore_eos = true;
    p.sampling.temperature = spec.temperature;
    p.sampling.top_p = spec.top_p;
    p.sampling.top_k = spec.top_k;
    p.sampling.min_p = spec.min_p;
    if (spec.temperature > 0.0f) p.sampling.seed = rng.next_u64();
    p.timeout_s = 3600;
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

struct LoadTimings {
  std::vector<double> ttft, e2e, tpot;
  double itl_sum = 0;
  int64_t itl_n = 0, generated = 0;
  int completed = 0;
  int failed = 0;
  std::string first_error;
  int good_requests = 0;
  int64_t good_tokens = 0;
  int slo_requests = 0;  // with the engine's latency targets
  int64_t slo_good_tokens = 0;
};

// Reads a finished request's events and records it.
void record_request(RequestHandle& h, const LoadSpec& spec, LoadTimings& rec) {
  RequestEvent ev;
  while (h.next(&ev)) {
    const auto* f = std::get_if<FinishEvent>(&ev);
    if (f == nullptr) continue;
    if (f->reason != FinishReason::kStop && f->reason != FinishReason::kLength) {  // refused, timed out, failed
      ++rec.failed;
      if (rec.first_error.empty()) rec.first_error = std::string(finish_reason_name(f->reason)) + ": " + f->message;
      return;
    }
    rec.ttft.push_back(f->timings.ttft_s);
    rec.e2e.push_back(f->timings.e2e_s);
    double tpot = 0;
    if (f->completion_tokens > 1) {
      rec.itl_sum += (f->timings.e2e_s - f->timings.ttft_s);
      rec.itl_n += f->completion_tokens - 1;
      tpot = (f->timings.e2e_s - f->timings.ttft_s) / static_cast<double>(f->completion_tokens - 1);
      rec.tpot.push_back(tpot);
    }
    rec.generated += f->completion_tokens;
    ++rec.completed;
    if (f->has_slo) {
      ++rec.slo_requests;
      if (f->slo_met) rec.slo_good_tokens += f->completion_tokens;
    }
    if ((spec.goodput_ttft_s <= 0 || f->timings.ttft_s <= spec.goodput_ttft_s) &&
        (spec.goodput_tpot_s <= 0 || tpot <= spec.goodput_tpot_s)) {
      ++rec.good_requests;
      rec.good_tokens += f->completion_tokens;
    }
    return;
  }
}

// The requests of a run, watched without a thread each: after each event the engine
// pushes, the handle's notify (on the engine thread) queues the request once it has
// finished, and one client thread takes finished requests from that queue. So the
// client wakes once per request, not once per token, and takes no core from the step.
class FinishQueue {
 public:
  explicit FinishQueue(size_t n) : handles_(n), queued_(new std::atomic<bool>[n]) {
    for (size_t i = 0; i < n; ++i) queued_[i] = false;
  }
  FinishQueue(const FinishQueue&) = delete;
  FinishQueue& operator=(const FinishQueue&) = delete;
  ~FinishQueue() {
    for (auto& h : handles_) {
      if (h) h->set_notify(nullptr);
    }
  }

  // Watches `h` as request i (each i once).
  void watch(size_t i, std::shared_ptr<RequestHandle> h) {
    RequestHandle* raw = h.get();
    handles_[i] = std::move(h);
    raw->set_notify([this, i, raw] { offer(i, *raw); });
    offer(i, *raw);  // it may have finished before the notify was set
  }

  // Waits for a watched request to finish; returns its handle, every event queued.
  RequestHandle& next_finished() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !done_.empty(); });
    const size_t i = done_.front();
    done_.pop_front();
    return *handles_[i];
  }

 private:
  void offer(size_t i, const RequestHandle& h) {
    if (!h.finished() || queued_[i].exchange(true)) return;
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(i);
    cv_.notify_one();
  }

  std::vector<std::shared_ptr<RequestHandle>> handles_;
  std::unique_ptr<std::atomic<bool>[]> queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<size_t> done_;
};

// Open loop: request i is submitted at arrivals[i] seconds from now, whatever became
// of the others; their ends are read after the last arrival.
void drive_open_loop(Engine& engine, const std::vector<RequestParams>& requests, const std::vector<double>& arrivals,
                     const LoadSpec& spec, LoadTimings& rec) {
  FinishQueue queue(requests.size());
  size_t in_flight = 0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < requests.size(); ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                              std::chrono::duration<double>(arrivals[i])));
    auto h = engine.submit(requests[i]);
    if (!h.ok()) {
      ++rec.failed;
      if (rec.first_error.empty()) rec.first_error = h.status().to_string();
      continue;
    }
    queue.watch(i, *std::move(h));
    ++in_flight;
  }
  for (; in_flight > 0; --in_flight) record_request(queue.next_finished(), spec, rec);
}

// Sends `requests` with `concurrency` in flight, submitting the next as one finishes,
// until all are done; records into `out` (null: nothing).
Status drive(Engine& engine, const std::vector<RequestParams>& requests, int concurrency, const LoadSpec& spec,
             LoadTimings* out) {
  LoadTimings sink;
  LoadTimings& rec = out != nullptr ? *out : sink;
  FinishQueue queue(requests.size());
  size_t next = 0, in_flight = 0;
  Status failure;
  auto submit_next = [&] {
    auto h = engine.submit(requests[next]);
    if (!h.ok()) {
      failure = h.status();
      return;
    }
    queue.watch(next++, *std::move(h));
    ++in_flight;
  };
  while (failure.ok() && next < requests.size() && in_flight < static_cast<size_t>(concurrency)) submit_next();
  while (in_flight > 0) {
    record_request(queue.next_finished(), spec, rec);
    --in_flight;
    if (failure.ok() && next < requests.size()) submit_next();
  }
  return failure;
}

}  // namespace

std::vector<double> make_arrival_times(const LoadSpec& spec) {
  std::vector<double> at(static_cast<size_t>(std::max(0, spec.requests)), 0.0);
  if (spec.request_rate <= 0) return at;
  Rng rng(spec.seed ^ 0x9e3779b97f4a7c15ULL);
  double t = 0;
  for (double& a : at) {
    t += -std::log(1.0 - rng.uniform()) / spec.request_rate;  // uniform() is in [0, 1)
    a = t;
  }
  return at;
}

Result<LoadResult> run_load(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
                            const LoadSpec& spec) {
  if (!(spec.request_rate >= 0) || !(spec.goodput_ttft_s >= 0) || !(spec.goodput_tpot_s >= 0)) {
    return invalid_argument("load spec: the request rate and goodput bounds must not be negative");
  }
  if (spec.requests < 1 || spec.concurrency < 1 || spec.warmup < 0 || spec.prompt_min < 2 || spec.prompt_max < spec.prompt_min ||
      spec.output_min < 1 || spec.output_max < spec.output_min) {
    return invalid_argument(
        "load spec: counts must be positive, warm-up rounds not negative and ranges ordered (prompts of at least 2 "
        "tokens)");
  }
  EngineConfig c = config;
  // Open loop, every request may be waiting at once.
  c.admission.max_waiting_requests =
      std::max(c.admission.max_waiting_requests, spec.request_rate > 0 ? spec.requests : spec.concurrency);
  c.result_cache_bytes = 0;  // every request must reach the model
  LLMS_ASSIGN_OR_RETURN(auto engine, Engine::create(model, tokenizer, c));
  const auto requests = make_load_requests(spec, model.config().n_vocab);
  engine->start();

  // Warm-up rounds: the same shape of load, from other seeds, and nothing recorded.
  for (int round = 0; round < spec.warmup; ++round) {
    LoadSpec w = spec;
    w.seed = spec.seed + 1000003 * static_cast<uint64_t>(round + 1);
    const Status warm = drive(*engine, make_load_requests(w, model.config().n_vocab), spec.concurrency, spec, nullptr);
    if (!warm.ok()) {
      engine->stop();
      return warm.with_context("warm-up");
    }
  }
  const int64_t warmup_preemptions = engine->snapshot().preemptions;
  engine->reset_step_profile();
  LoadTimings timed;
  const Stopwatch wall;
  Status run = ok_status();
  if (spec.request_rate > 0) {
    drive_open_loop(*engine, requests, make_arrival_times(spec), spec, timed);
  } else {
    run = drive(*engine, requests, spec.concurrency, spec, &timed);
  }
  const double seconds = wall.elapsed_s();
  const EngineSnapshot snap = engine->snapshot();
  engine->stop();
  const std::string profile = c.profile ? engine->step_profile().table() : std::string();
  LLMS_RETURN_IF_ERROR(run);

  LoadResult r;
  r.policy = batching_policy_name(config.batching.policy);
  r.completed = timed.completed;
  r.profile = profile;
  for (const StepBucketProfile& b : engine->step_profile().buckets()) r.profiled_tokens += b.tokens;
  r.generated_tokens = timed.generated;
  r.seconds = seconds;
  r.tokens_per_s = static_cast<double>(timed.generated) / seconds;
  r.ttft_p50_s = percentile(timed.ttft, 0.5);
  r.ttft_p99_s = percentile(timed.ttft, 0.99);
  r.e2e_p50_s = percentile(timed.e2e, 0.5);
  r.e2e_p99_s = percentile(timed.e2e, 0.99);
  r.tpot_p99_s = percentile(timed.tpot, 0.99);
  r.itl_mean_s = timed.itl_n > 0 ? timed.itl_sum / static_cast<double>(timed.itl_n) : 0;
  r.preemptions = snap.preemptions - warmup_preemptions;
  r.failed = timed.failed;
  r.first_error = timed.first_error;
  r.request_goodput = static_cast<double>(timed.good_requests) / seconds;
  r.goodput_tok_s = static_cast<double>(timed.good_tokens) / seconds;
  r.slo_requests = timed.slo_requests;
  r.slo_goodput_tok_s = static_cast<double>(timed.slo_good_tokens) / seconds;
  r.expert_load_imbalance = snap.expert_load_imbalance;
  return r;
}

}  // namespace llms
