// The quantization planner behind `quantize --target-bpw / --target-size / --max-kl`:
// chooses a type per weight tensor from the native types to minimise the model's
// KL divergence from its source under a size budget, or the size under a KL bound.
//
// Sensitivity is measured on the model itself: each tensor alone is quantized to each
// candidate type that fits its rows (everything else left as in the source), and the
// KL divergence of that model from the source on a calibration text is that
// choice's cost. Costs are taken as additive across tensors (first order in small
// perturbations); the plan minimises their sum exactly, as a multiple-choice knapsack
// solved by dynamic programming over sizes. The chosen file is then measured on a
// held-out text: predicted and measured KL are both reported.
// One run per (tensor, type): meant for models of up to a few hundred million
// weights, where each run takes well under a second.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"
#include "tools/quantizer.h"

namespace llms {

struct PlanRequest {
  std::vector<int32_t> calib;  // tokens the sensitivities are measured on
  std::vector<int32_t> eval;   // held-out tokens the result is measured on
  uint64_t target_bytes = 0;   // of all tensors' data (0 when max_kl is set)
  double max_kl = 0;           // nats per token on `eval` (0 when target_bytes is set)
  std::vector<DType> candidates;  // empty: Q3_K, IQ4_XS, Q4_0, IQ4_NL, Q4_K, Q5_0, Q5_K, Q6_K, Q8_0, F16
  // Set (`--type T` with a target): T for every matrix whose rows are whole blocks of
  // T; the planner chooses only the others.
  std::optional<DType> where_fits;
  // Set (`--type T --policy measured`): every matrix whose rows are whole blocks of T
  // takes T or an option of at least its size (a larger candidate, or the source
  // type), so that the plan only chooses which matrices to protect; the others are
  // planned as usual.
  std::optional<DType> floor;
  int ctx = 128;
  int max_windows = 0;
};

struct PlanOption {
  DType type = DType::kF32;
  uint64_t bytes = 0;
  double kl = 0;  // measured alone, on the calibration text (0 at the source type)
};

struct PlannedTensor {
  std::string name;
  DType type = DType::kF32;
  uint64_t bytes = 0;
  double predicted_kl = 0;          // the chosen option's cost
  std::vector<PlanOption> options;  // all it could take, by size (dominated ones dropped)
};

struct PlanResult {
  std::vector<PlannedTensor> tensors;  // the weight matrices, in file order
  uint64_t bytes = 0;                  // all tensors' data, vectors included
  uint64_t elements = 0;               // all tensors' values
  double predicted_kl = 0;             // sum of the chosen costs
  double measured_kl = 0;              // of the written file, on `eval`
  double top1_agreement = 0;
  double perplexity = 0, base_perplexity = 0;
  bool met = true;                     // max_kl: the bound holds on `eval`
  int sensitivity_runs = 0;
  int attempts = 1;                    // max_kl: plans tried
  QuantizeReport report;               // of the written file
};

// Plans, writes `out_path` with `base` options (importance, keep rules are ignored:
// the plan decides every matrix) and measures it.
Result<PlanResult> plan_and_quantize(const std::string& in_path, const std::string& out_path,
                                     const QuantizeOptions& base, const PlanRequest& request);

}  // namespace llms
