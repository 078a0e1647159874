// Comparison of secrets (API keys, admin tokens) in time that depends only on the
// lengths, so that a client cannot find a key byte by byte from response times.
//
// Thread-safety: a pure function.
#pragma once

#include <algorithm>
#include <string_view>

namespace llms {

inline bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

}  // namespace llms
