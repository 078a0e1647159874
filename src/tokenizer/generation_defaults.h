// GenerationDefaults: the sampling defaults a model directory ships in
// generation_config.json. The server applies each one that is set to a request that
// omits the parameter; a request's own value always wins.
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace llms {

struct GenerationDefaults {
  std::vector<int32_t> eos_token_ids;  // every id that ends generation (eos_token_id: an int or a list)
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int32_t> top_k;

  bool empty() const { return eos_token_ids.empty() && !temperature && !top_p && !top_k; }
};

}  // namespace llms
