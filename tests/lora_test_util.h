// Helpers of the LoRA server tests (server_lora_test.cc, server_lora_memory_test.cc):
// the synthetic base model their adapters are made for.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "io/gguf_file.h"
#include "tools/synthetic.h"

namespace llms::test {

// Writes a synthetic "tiny" model of `seed` at DIR/base.gguf (DIR made if need be) and
// returns it opened, for make_synthetic_lora().
inline GgufFile write_lora_base(const std::string& dir, uint64_t seed) {
  std::filesystem::create_directories(dir);
  SyntheticSpec spec = synthetic_preset("tiny").value();
  spec.seed = seed;
  EXPECT_TRUE(write_synthetic_model(spec, dir + "/base.gguf").ok());
  return GgufFile::open(dir + "/base.gguf").value();
}

}  // namespace llms::test
