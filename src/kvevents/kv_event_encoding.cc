#include "kvevents/kv_event_encoding.h"

#include <msgpack.hpp>

namespace llms {

std::string encode_event_batch(double unix_seconds, const std::vector<KvEvent>& events) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(3);
  pk.pack_double(unix_seconds);
  pk.pack_array(static_cast<uint32_t>(events.size()));
  for (const KvEvent& e : events) {
    switch (e.kind) {
      case KvEvent::Kind::kStored:
        pk.pack_array(7);
        pk.pack(std::string("BlockStored"));
        pk.pack(e.hashes);
        if (e.parent) {
          pk.pack_uint64(*e.parent);
        } else {
          pk.pack_nil();
        }
        pk.pack(e.tokens);
        pk.pack_int32(e.block_size);
        pk.pack_nil();  // lora_id
        pk.pack(std::string("CPU"));
        break;
      case KvEvent::Kind::kRemoved:
        pk.pack_array(3);
        pk.pack(std::string("BlockRemoved"));
        pk.pack(e.hashes);
        pk.pack(std::string("CPU"));
        break;
      case KvEvent::Kind::kCleared:
        pk.pack_array(1);
        pk.pack(std::string("AllBlocksCleared"));
        break;
    }
  }
  pk.pack_int32(0);  // data-parallel rank
  return std::string(buf.data(), buf.size());
}

std::string encode_sequence_number(uint64_t seq) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((seq >> (56 - 8 * i)) & 0xFF);
  return out;
}

}  // namespace llms
