// Importance of every weight's input channel, the data behind `quantize --imatrix`:
// for each linear layer (by weight tensor name), the sum of the squared activations
// of each input channel over a calibration text and the number of tokens summed.
// `llmserve imatrix` writes it; the quantizer weighs each weight's rounding error by
// its channel's mean squared activation, the expected squared error it adds to the
// layer's output.
//
// File: GGUF, general.type "imatrix", per weight tensor NAME two F32 tensors:
// NAME.in_sum2 [cols] (sums of x^2) and NAME.counts [1] (tokens); metadata
// imatrix.datasets (the calibration file names) and imatrix.chunk_count (windows).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace llms {

struct ChannelSums {
  std::vector<double> sum_sq;  // per input channel
  int64_t count = 0;           // tokens summed
};

struct ImportanceTable {
  std::map<std::string, ChannelSums> tensors;
  std::vector<std::string> datasets;
  int64_t chunks = 0;

  // Mean squared activation per channel of `name`, floored at 1e-3 of the channel
  // mean (a channel the text never drove still counts a little), or empty when the
  // table has no entry for it.
  std::vector<float> importance(const std::string& name) const;
};

Status write_importance(const ImportanceTable& table, const std::string& path);
Result<ImportanceTable> read_importance(const std::string& path);

}  // namespace llms
