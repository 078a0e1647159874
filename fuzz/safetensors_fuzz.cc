// libFuzzer target for the safetensors reader (the header of a Hugging Face weight
// file): any input must parse or fail with a Status; whatever parses must describe
// tensors that lie inside the input, tile its data section, and hold exactly their
// shape's bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "io/safetensors.h"

// Keeps the reads above from being optimised away.
uint8_t g_sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exactly-sized copy, so reading one byte too far is caught.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size]);
  if (size > 0) std::memcpy(buf.get(), data, size);
  auto r = llms::SafetensorsFile::parse({buf.get(), size});
  if (!r.ok()) return 0;
  uint8_t sink = 0;
  uint64_t at = r->data_offset();
  for (const auto& t : r->tensors()) {
    if (t.data != buf.get() + at || t.data + t.num_bytes > buf.get() + size) std::abort();
    if (static_cast<uint64_t>(t.num_elements() * t.element_size) != t.num_bytes) std::abort();
    if (t.num_bytes > 0) sink ^= t.data[0] ^ t.data[t.num_bytes - 1];
    at += t.num_bytes;
  }
  if (at != size) std::abort();
  for (const auto& [key, value] : r->metadata()) sink ^= static_cast<uint8_t>(key.size() + value.size());
  g_sink = sink;
  return 0;
}
