// Weights are resident once: after a model is loaded, the pages of the file it
// repacked are no longer mapped into the process (only the token embedding, read in
// place, may be), and the bytes still read the same through the mapping.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

uint64_t tensor_bytes_hash(const GgufFile& f) {
  HashBuilder h;
  for (const auto& t : f.tensors()) h.add_bytes(t.data, t.num_bytes);
  return h.finish128().lo;
}

TEST(WeightsMemoryTest, RepackedTensorsLeaveNoFilePagesResident) {
  SyntheticSpec spec;
  spec.n_vocab = 512, spec.n_embd = 256, spec.n_layer = 3, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 768;
  spec.weight_type = DType::kQ8_0;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_weights_memory.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  const uint64_t want = tensor_bytes_hash(GgufFile::open(path).value());

  auto model = Model::load(path).value();
  const GgufFile& f = model->file();
  const WeightsMemory mem = model->weights_memory();
  EXPECT_EQ(mem.mapped_bytes, f.find_tensor("token_embd.weight")->num_bytes);
  EXPECT_GE(mem.owned_bytes, static_cast<int64_t>(f.file_size()) - mem.mapped_bytes - (64 << 10));
  // Nothing stays mapped: the embedding is read in place, as tokens need its rows.
  EXPECT_EQ(f.resident_bytes(), 0);

  // The probe sees pages come back as they are read, and they read the same.
  EXPECT_EQ(tensor_bytes_hash(f), want);
  EXPECT_GE(f.resident_bytes(), static_cast<int64_t>(f.file_size() - f.data_offset()) * 9 / 10);
  model.reset();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace llms
