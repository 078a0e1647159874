// System memory probes: what this process owns and what it may use. The one rule for a
// configured memory limit (0: the machine's) lives here, so that KV sizing, admission,
// the draft model's pool and the deployer's room check all read the same number.
//
// Thread-safety: every function reads /proc or /sys afresh and may be called from any thread.
#pragma once

#include <cstdint>

namespace llms {

// Memory this process owns, in bytes: its anonymous resident memory (RssAnon), not
// the clean file pages it maps, which the kernel can drop at will (0 when unknown).
int64_t process_rss_bytes();

// The memory this process may use: the cgroup limit when set, else physical RAM.
int64_t machine_memory_bytes();

// The memory limit in force: `configured` when it is set (> 0), else the machine's
// (machine_memory_bytes()).
int64_t effective_memory_limit(int64_t configured);

}  // namespace llms
