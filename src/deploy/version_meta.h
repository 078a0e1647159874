// VersionMeta: what a version's optional meta.toml says about it.
//
//   notes = "Q8_0 of v1, made 2026-12-01"
//   gate_max_kl = 0.02        # quality gate thresholds for this version
//   gate_min_top1 = 0.95
//   kv_type = "q8_0"          # KV cache type of keys and values (or kv_k_type / kv_v_type)
//
// Unknown keys are errors naming the key, like the server's own config file.
//
// Thread-safety: plain values.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "tensor/dtype.h"

namespace llms {

struct VersionMeta {
  std::string notes;
  std::optional<double> gate_max_kl;
  std::optional<double> gate_min_top1;
  std::optional<DType> k_type;
  std::optional<DType> v_type;
};

// An absent file gives the empty meta; a malformed one an INVALID_ARGUMENT naming it.
Result<VersionMeta> read_version_meta(const std::string& path);
Result<VersionMeta> parse_version_meta(const std::string& toml, const std::string& origin);

}  // namespace llms
