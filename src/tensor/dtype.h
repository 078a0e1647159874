// DType: the element/block types of GGUF tensors (ids match the GGUF specification, so
// a file's type id converts directly), with the size facts every layer needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llms {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct DTypeInfo {
  DType type;
  const char* name;     // lower case, as users type it: "q4_k"
  int64_t block_size;   // elements per block
  int64_t type_size;    // bytes per block
};

// Facts about a type id read from a file; nullopt for ids that are not (or no longer)
// defined by the GGUF specification.
std::optional<DTypeInfo> dtype_info(uint32_t id);
const DTypeInfo& dtype_info(DType type);

std::string_view dtype_name(DType type);
// Accepts the lower- or upper-case name ("q8_0", "Q8_0").
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes taken by `n` elements of `type` laid out in blocks; n must be a multiple of
// the block size (callers validate first with row_fits_blocks()).
int64_t dtype_row_bytes(DType type, int64_t n);
bool row_fits_blocks(DType type, int64_t n);

}  // namespace llms
