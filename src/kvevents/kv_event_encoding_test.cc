#include "kvevents/kv_event_encoding.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>

namespace llms {
namespace {

// The sequence number is 8 bytes, most significant first.
TEST(KvEventEncodingTest, SequenceNumberIsBigEndian) {
  const std::string s = encode_sequence_number(0x0102030405060708ull);
  ASSERT_EQ(s.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(static_cast<unsigned char>(s[static_cast<size_t>(i)]), i + 1);
  EXPECT_EQ(encode_sequence_number(0), std::string(8, '\0'));
}

// The batch decodes (with msgpack's own reader) to vLLM's array layout: [ts, events,
// dp_rank], each event led by its tag.
TEST(KvEventEncodingTest, BatchHasVllmsArrayLayout) {
  std::vector<KvEvent> events(3);
  events[0].kind = KvEvent::Kind::kStored;
  events[0].hashes = {0xFFFFFFFFFFFFFFF0ull};
  events[0].parent = 7;
  events[0].tokens = {1, 2, 3, 4};
  events[0].block_size = 4;
  events[1].kind = KvEvent::Kind::kRemoved;
  events[1].hashes = {9, 10};
  events[2].kind = KvEvent::Kind::kCleared;
  const std::string bytes = encode_event_batch(1234.5, events);
  const msgpack::object_handle h = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& o = h.get();
  ASSERT_EQ(o.type, msgpack::type::ARRAY);
  ASSERT_EQ(o.via.array.size, 3u);
  EXPECT_DOUBLE_EQ(o.via.array.ptr[0].as<double>(), 1234.5);
  EXPECT_EQ(o.via.array.ptr[2].as<int>(), 0);
  const msgpack::object& ev = o.via.array.ptr[1];
  ASSERT_EQ(ev.via.array.size, 3u);

  const msgpack::object& stored = ev.via.array.ptr[0];
  ASSERT_EQ(stored.via.array.size, 7u);
  EXPECT_EQ(stored.via.array.ptr[0].as<std::string>(), "BlockStored");
  EXPECT_EQ(stored.via.array.ptr[1].as<std::vector<uint64_t>>(), std::vector<uint64_t>{0xFFFFFFFFFFFFFFF0ull});
  EXPECT_EQ(stored.via.array.ptr[2].as<uint64_t>(), 7u);
  EXPECT_EQ(stored.via.array.ptr[3].as<std::vector<int32_t>>(), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(stored.via.array.ptr[4].as<int>(), 4);
  EXPECT_EQ(stored.via.array.ptr[5].type, msgpack::type::NIL);  // lora_id
  EXPECT_EQ(stored.via.array.ptr[6].as<std::string>(), "CPU");

  const msgpack::object& removed = ev.via.array.ptr[1];
  ASSERT_EQ(removed.via.array.size, 3u);
  EXPECT_EQ(removed.via.array.ptr[0].as<std::string>(), "BlockRemoved");
  EXPECT_EQ(removed.via.array.ptr[1].as<std::vector<uint64_t>>(), (std::vector<uint64_t>{9, 10}));
  EXPECT_EQ(removed.via.array.ptr[2].as<std::string>(), "CPU");

  const msgpack::object& cleared = ev.via.array.ptr[2];
  ASSERT_EQ(cleared.via.array.size, 1u);
  EXPECT_EQ(cleared.via.array.ptr[0].as<std::string>(), "AllBlocksCleared");

  // A first block has no parent.
  events.resize(1);
  events[0].parent.reset();
  const std::string first = encode_event_batch(0, events);
  const msgpack::object_handle h2 = msgpack::unpack(first.data(), first.size());
  EXPECT_EQ(h2.get().via.array.ptr[1].via.array.ptr[0].via.array.ptr[2].type, msgpack::type::NIL);
}

}  // namespace
}  // namespace llms
