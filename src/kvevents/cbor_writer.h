// The small part of CBOR (RFC 8949) that block hashes need, in its deterministic form
// (§4.2.1: every head in its shortest encoding, definite lengths): integers, byte and
// text strings, arrays and null. Python's cbor2.dumps(..., canonical=True) writes the same
// bytes for the same values (tuples as arrays, None as null).
//
// Thread-safety: a value.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace llms {

class CborWriter {
 public:
  void integer(int64_t v);
  void unsigned_integer(uint64_t v) { head(0, v); }
  void bytes(std::span<const uint8_t> b);
  void text(std::string_view s);  // UTF-8, as given
  void array(uint64_t n) { head(4, n); }
  void null() { out_.push_back(static_cast<char>(0xF6)); }
  const std::string& data() const { return out_; }

 private:
  void head(int major, uint64_t arg);
  std::string out_;
};

}  // namespace llms
