#include "eval/quant_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "base/thread_pool.h"
#include "eval/perplexity.h"
#include "io/gguf_file.h"
#include "model/model.h"

namespace llms {
namespace {

constexpr DType kDefaultCandidates[] = {DType::kQ3_K, DType::kIQ4_XS, DType::kQ4_0, DType::kIQ4_NL, DType::kQ4_K,
                                        DType::kQ5_0, DType::kQ5_K,   DType::kQ6_K, DType::kQ8_0,   DType::kF16};

using Option = PlanOption;

// One weight matrix and its options, sorted by bytes, dominated ones dropped.
struct Matrix {
  std::string name;
  std::vector<Option> options;
};

uint64_t bytes_as(const GgufTensorInfo& t, DType type) {
  return static_cast<uint64_t>(dtype_row_bytes(type, t.ne[0]) * (t.num_elements() / t.ne[0]));
}

// Writes `plan` over the source, loads it and scores it against `ref`.
Result<PerplexityResult> score(const std::string& in, const std::string& path, QuantizeOptions o,
                               const std::map<std::string, DType>& plan, const ReferenceLogprobs& ref,
                               ThreadPool& pool, QuantizeReport* report = nullptr) {
  o.plan = plan;
  LLMS_ASSIGN_OR_RETURN(QuantizeReport r, quantize_model(in, path, o));
  if (report != nullptr) *report = std::move(r);
  LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(path));
  return evaluate_against(ref, {model.get(), DType::kF32, DType::kF32}, pool);
}

uint64_t bytes_of(const std::vector<Matrix>& ms, const std::vector<int>& pick) {
  uint64_t b = 0;
  for (size_t i = 0; i < ms.size(); ++i) b += ms[i].options[pick[i]].bytes;
  return b;
}

double kl_of(const std::vector<Matrix>& ms, const std::vector<int>& pick) {
  double k = 0;
  for (size_t i = 0; i < ms.size(); ++i) k += ms[i].options[pick[i]].kl;
  return k;
}

// The multiple-choice knapsack of the plan, solved exactly by dynamic programming over
// sizes in units of `unit` bytes (each option's size rounded up, so a plan that fits
// in units fits in bytes): best[b] is the least total cost of all matrices within b
// units, and from[i][b] the option matrix i takes in it.
class Knapsack {
 public:
  Knapsack(const std::vector<Matrix>& ms, uint64_t max_bytes)
      : ms_(ms), unit_(std::max<uint64_t>(16, max_bytes / 50000 + 1)), units_(static_cast<int64_t>(max_bytes / unit_)) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::vector<double> cur(static_cast<size_t>(units_ + 1), 0.0), next;
    from_.assign(ms.size(), std::vector<int8_t>(static_cast<size_t>(units_ + 1), -1));
    for (size_t i = 0; i < ms.size(); ++i) {
      next.assign(cur.size(), kInf);
      for (size_t k = 0; k < ms[i].options.size(); ++k) {
        const int64_t w = static_cast<int64_t>((ms[i].options[k].bytes + unit_ - 1) / unit_);
        for (int64_t b = w; b <= units_; ++b) {
          const double c = cur[static_cast<size_t>(b - w)] + ms[i].options[k].kl;
          if (c < next[static_cast<size_t>(b)]) next[static_cast<size_t>(b)] = c, from_[i][static_cast<size_t>(b)] = static_cast<int8_t>(k);
        }
      }
      cur.swap(next);
    }
    best_ = std::move(cur);
  }
  // The least-cost plan within `bytes`, or empty when none fits.
  std::vector<int> within(uint64_t bytes) const {
    const int64_t b = std::min<int64_t>(units_, static_cast<int64_t>(bytes / unit_));
    if (b < 0 || !std::isfinite(best_[static_cast<size_t>(b)])) return {};
    return trace(b);
  }
  // The smallest plan whose cost is at most `bound`, or the least-cost plan when none is.
  std::vector<int> smallest_within_cost(double bound) const {
    for (int64_t b = 0; b <= units_; ++b) {
      if (best_[static_cast<size_t>(b)] <= bound) return trace(b);
    }
    return trace(units_);
  }

 private:
  std::vector<int> trace(int64_t b) const {
    std::vector<int> pick(ms_.size());
    for (size_t i = ms_.size(); i-- > 0;) {
      pick[i] = from_[i][static_cast<size_t>(b)];
      b -= static_cast<int64_t>((ms_[i].options[pick[i]].bytes + unit_ - 1) / unit_);
    }
    return pick;
  }

  const std::vector<Matrix>& ms_;
  uint64_t unit_;
  int64_t units_;
  std::vector<std::vector<int8_t>> from_;
  std::vector<double> best_;
};

}  // namespace

Result<PlanResult> plan_and_quantize(const std::string& in_path, const std::string& out_path,
                                     const QuantizeOptions& base, const PlanRequest& req) {
  if ((req.target_bytes > 0) == (req.max_kl > 0)) return invalid_argument("give one of a size target and --max-kl");
  if (req.calib.empty()) return invalid_argument("the planner needs a calibration text (--calib)");
  if (in_path == out_path) return invalid_argument("the output must be a different file than the input");
  ThreadPool pool(base.threads);
  LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Model> source, Model::load(in_path));
  const PerplexityOptions popts{req.ctx, req.max_windows};
  const EvalSide side{source.get(), DType::kF32, DType::kF32};
  LLMS_ASSIGN_OR_RETURN(ReferenceLogprobs calib_ref, record_logprobs(req.calib, side, popts, pool));
  LLMS_ASSIGN_OR_RETURN(ReferenceLogprobs eval_ref,
                        record_logprobs(req.eval.empty() ? req.calib : req.eval, side, popts, pool));
  const GgufFile& f = source->file();

  // Every matrix at its source type; vectors are fixed cost.
  std::map<std::string, DType> unchanged;
  uint64_t fixed = 0;
  PlanResult result;
  for (const auto& t : f.tensors()) {
    result.elements += static_cast<uint64_t>(t.num_elements());
    if (t.n_dims < 2 || is_expert_router(t.name)) {
      fixed += bytes_as(t, DType::kF32);
    } else {
      unchanged[t.name] = quantize_target_supported(t.dtype) ? t.dtype : DType::kF32;
    }
  }
  const std::vector<DType> candidates =
      req.candidates.empty() ? std::vector<DType>(std::begin(kDefaultCandidates), std::end(kDefaultCandidates)) : req.candidates;
  const std::string tmp = out_path + ".plan.tmp.gguf";
  std::vector<Matrix> ms;
  for (const auto& t : f.tensors()) {
    if (t.n_dims < 2 || is_expert_router(t.name)) continue;
    Matrix m;
    m.name = t.name;
    const bool fixed_type = req.where_fits && type_fits_rows(*req.where_fits, t.ne[0]);
    const bool floored = !fixed_type && req.floor && type_fits_rows(*req.floor, t.ne[0]);
    const uint64_t least_bytes = floored ? bytes_as(t, *req.floor) : 0;
    std::vector<DType> types = fixed_type ? std::vector<DType>{*req.where_fits} : candidates;
    if (floored && std::find(types.begin(), types.end(), *req.floor) == types.end()) types.push_back(*req.floor);
    if (!fixed_type) m.options.push_back({unchanged[t.name], bytes_as(t, unchanged[t.name]), 0.0});
    for (DType type : types) {
      if (!fixed_type && (type == unchanged[t.name] || !type_fits_rows(type, t.ne[0]) || !quantize_target_supported(type))) continue;
      if (bytes_as(t, type) < least_bytes) continue;
      std::map<std::string, DType> plan = unchanged;
      plan[t.name] = type;
      auto r = score(in_path, tmp, base, plan, calib_ref, pool);
      if (!r.ok()) {
        std::filesystem::remove(tmp);
        return r.status();
      }
      ++result.sensitivity_runs;
      m.options.push_back({type, bytes_as(t, type), std::max(0.0, r->kl_divergence)});
    }
    std::sort(m.options.begin(), m.options.end(),
              [](const Option& a, const Option& b) { return a.bytes != b.bytes ? a.bytes < b.bytes : a.kl < b.kl; });
    std::vector<Option> kept;  // strictly better as they grow
    for (const Option& o : m.options) {
      if (kept.empty() || o.kl < kept.back().kl) kept.push_back(o);
    }
    m.options = std::move(kept);
    ms.push_back(std::move(m));
  }
  std::filesystem::remove(tmp);

  auto write = [&](const std::vector<int>& pick) -> Result<PerplexityResult> {
    std::map<std::string, DType> plan;
    for (size_t i = 0; i < ms.size(); ++i) plan[ms[i].name] = ms[i].options[pick[i]].type;
    return score(in_path, out_path, base, plan, eval_ref, pool, &result.report);
  };
  std::vector<int> pick;
  PerplexityResult measured;
  uint64_t most = 0;
  for (const Matrix& m : ms) most += m.options.back().bytes;
  const Knapsack knapsack(ms, req.target_bytes > 0 ? std::min(most, req.target_bytes) : most);
  if (req.target_bytes > 0) {
    if (req.target_bytes <= fixed) return invalid_argument(fmt::format("the size target is below the {} bytes of the vectors", fixed));
    pick = knapsack.within(req.target_bytes - fixed);
    if (pick.empty()) {
      uint64_t least = 0;
      for (const Matrix& m : ms) least += m.options.front().bytes;
      return invalid_argument(fmt::format("the size target leaves {} bytes for the weight matrices; the smallest plan needs {}",
                                          req.target_bytes - fixed, least));
    }
    LLMS_ASSIGN_OR_RETURN(measured, write(pick));
  } else {
    // The smallest plan whose predicted cost is within the bound; while the measured
    // KL on the held-out text exceeds it, plan again for a tighter prediction.
    double bound = req.max_kl;
    result.attempts = 0;
    const double least_cost = kl_of(ms, knapsack.within(most));
    for (;;) {
      ++result.attempts;
      pick = knapsack.smallest_within_cost(bound);
      LLMS_ASSIGN_OR_RETURN(measured, write(pick));
      if (measured.kl_divergence <= req.max_kl || result.attempts == 4 || kl_of(ms, pick) <= least_cost) break;
      bound *= 0.9 * req.max_kl / measured.kl_divergence;
    }
    result.met = measured.kl_divergence <= req.max_kl;
  }
  for (size_t i = 0; i < ms.size(); ++i) {
    const Option& o = ms[i].options[pick[i]];
    result.tensors.push_back({ms[i].name, o.type, o.bytes, o.kl, ms[i].options});
  }
  result.bytes = fixed + bytes_of(ms, pick);
  result.predicted_kl = kl_of(ms, pick);
  result.measured_kl = measured.kl_divergence;
  result.top1_agreement = measured.top1_agreement;
  result.perplexity = measured.perplexity;
  result.base_perplexity = measured.base_perplexity;
  return result;
}

}  // namespace llms
