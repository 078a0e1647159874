// `llmserve quant-report`: how a quantization type would treat every weight tensor of
// a model, before committing to it. Per tensor: the error of the type on the weights
// (relative RMS, max abs, SNR) and the tail heaviness of their distribution (excess
// kurtosis, share of values beyond 6 sigma); with a text, also the error each layer's
// output actually suffers on that text (the product with the quantized weight against
// the exact one, on the real activations). Tensors whose error exceeds the tolerance
// are flagged as needing higher precision.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace llms {

struct QuantReportOptions {
  DType type = DType::kQ4_K;
  std::vector<int32_t> tokens;  // optional: a tokenized text to measure output errors on
  int max_tokens = 256;         // of the text, in one window
  double tolerance = 0.05;   // relative RMS above which a tensor is flagged
  int threads = 0;
};

struct TensorQuantReport {
  std::string name;
  DType type = DType::kF32;    // the requested type, or the nearest that fits the rows
  bool fits = true;            // rows are whole blocks of the requested type
  double relative_rms = 0;
  double max_abs = 0;
  double snr_db = 0;
  double kurtosis = 0;         // excess
  double outlier_share = 0;    // beyond 6 sigma
  double output_relative_rms = -1;  // on the text; -1 without one
  bool flagged = false;
};

struct QuantReport {
  std::vector<TensorQuantReport> tensors;
  int64_t text_tokens = 0;
};

Result<QuantReport> quant_report(const std::string& model_path, const QuantReportOptions& options);

}  // namespace llms
