#include "kvevents/cbor_writer.h"

namespace llms {

void CborWriter::head(int major, uint64_t arg) {
  const char m = static_cast<char>(major << 5);
  auto be = [&](int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out_.push_back(static_cast<char>((arg >> (8 * i)) & 0xFF));
  };
  if (arg < 24) {
    out_.push_back(static_cast<char>(m | static_cast<char>(arg)));
  } else if (arg <= 0xFF) {
    out_.push_back(static_cast<char>(m | 24)), be(1);
  } else if (arg <= 0xFFFF) {
    out_.push_back(static_cast<char>(m | 25)), be(2);
  } else if (arg <= 0xFFFFFFFFu) {
    out_.push_back(static_cast<char>(m | 26)), be(4);
  } else {
    out_.push_back(static_cast<char>(m | 27)), be(8);
  }
}

void CborWriter::integer(int64_t v) {
  if (v >= 0) {
    head(0, static_cast<uint64_t>(v));
  } else {
    head(1, static_cast<uint64_t>(-(v + 1)));  // -1 - n
  }
}

void CborWriter::bytes(std::span<const uint8_t> b) {
  head(2, b.size());
  out_.append(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace llms

namespace llms {

void CborWriter::text(std::string_view s) {
  head(3, s.size());
  out_.append(s.data(), s.size());
}

}  // namespace llms
