// Comparison of secrets (API keys, admin tokens) in time that depends only on the
// lengths, so that a client cannot find a key byte by byte from response times.
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

namespace llms {

// Equal in time that depends only on `presented`'s length: the presented bytes are
// walked whatever the secret's length, every difference folded in. An empty secret
// matches nothing.
inline bool constant_time_equal(std::string_view presented, std::string_view secret) {
  unsigned diff = presented.size() == secret.size() ? 0u : 1u;
  const size_t n = secret.size();
  for (size_t i = 0; i < presented.size(); ++i) {
    const unsigned char k = n == 0 ? 0 : static_cast<unsigned char>(secret[i % n]);
    diff |= static_cast<unsigned>(static_cast<unsigned char>(presented[i]) ^ k);
  }
  return diff == 0 && n > 0;
}

}  // namespace llms
