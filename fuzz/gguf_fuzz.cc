// libFuzzer target for the GGUF reader: any input must parse or fail with a Status;
// whatever parses must describe tensors that lie inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "io/gguf_file.h"

// Keeps the reads above from being optimised away.
uint8_t g_sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exactly-sized copy, so reading one byte too far is caught.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size]);
  if (size > 0) std::memcpy(buf.get(), data, size);
  auto r = llms::GgufFile::parse({buf.get(), size});
  if (!r.ok()) return 0;
  uint8_t sink = 0;
  for (const auto& t : r->tensors()) {
    if (t.data < buf.get() || t.data + t.num_bytes > buf.get() + size) std::abort();
    if (t.num_bytes > 0) sink ^= t.data[0] ^ t.data[t.num_bytes - 1];
  }
  for (const auto& [key, value] : r->metadata()) sink ^= static_cast<uint8_t>(value.summary().size() + key.size());
  g_sink = sink;
  return 0;
}
