#include "tensor/dtype.h"

#include <array>
#include <cctype>

#include "base/check.h"

namespace llms {
namespace {

constexpr int64_t kQK = 32;     // elements per block of the simple formats
constexpr int64_t kQK_K = 256;  // elements per super-block of the k-quants

constexpr std::array<DTypeInfo, 32> kTypes = {{
    {DType::kF32, "f32", 1, 4},
    {DType::kF16, "f16", 1, 2},
    {DType::kQ4_0, "q4_0", kQK, 2 + kQK / 2},
    {DType::kQ4_1, "q4_1", kQK, 4 + kQK / 2},
    {DType::kQ5_0, "q5_0", kQK, 2 + 4 + kQK / 2},
    {DType::kQ5_1, "q5_1", kQK, 4 + 4 + kQK / 2},
    {DType::kQ8_0, "q8_0", kQK, 2 + kQK},
    {DType::kQ8_1, "q8_1", kQK, 4 + kQK},
    {DType::kQ2_K, "q2_k", kQK_K, kQK_K / 16 + kQK_K / 4 + 4},
    {DType::kQ3_K, "q3_k", kQK_K, kQK_K / 8 + kQK_K / 4 + 12 + 2},
    {DType::kQ4_K, "q4_k", kQK_K, 4 + 12 + kQK_K / 2},
    {DType::kQ5_K, "q5_k", kQK_K, 4 + 12 + kQK_K / 8 + kQK_K / 2},
    {DType::kQ6_K, "q6_k", kQK_K, kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2},
    {DType::kQ8_K, "q8_k", kQK_K, 4 + kQK_K + kQK_K / 16 * 2},
    {DType::kIQ2_XXS, "iq2_xxs", kQK_K, 2 + kQK_K / 4},
    {DType::kIQ2_XS, "iq2_xs", kQK_K, 2 + kQK_K / 4 + kQK_K / 32},
    {DType::kIQ3_XXS, "iq3_xxs", kQK_K, 2 + 3 * kQK_K / 8},
    {DType::kIQ1_S, "iq1_s", kQK_K, 2 + kQK_K / 8 + kQK_K / 16},
    {DType::kIQ4_NL, "iq4_nl", kQK, 2 + kQK / 2},
    {DType::kIQ3_S, "iq3_s", kQK_K, 2 + kQK_K / 4 + kQK_K / 32 + kQK_K / 8 + kQK_K / 64},
    {DType::kIQ2_S, "iq2_s", kQK_K, 2 + kQK_K / 4 + kQK_K / 32 + kQK_K / 32},
    {DType::kIQ4_XS, "iq4_xs", kQK_K, 2 + 2 + kQK_K / 64 + kQK_K / 2},
    {DType::kI8, "i8", 1, 1},
    {DType::kI16, "i16", 1, 2},
    {DType::kI32, "i32", 1, 4},
    {DType::kI64, "i64", 1, 8},
    {DType::kF64, "f64", 1, 8},
    {DType::kIQ1_M, "iq1_m", kQK_K, kQK_K / 8 + kQK_K / 16 + kQK_K / 32},
    {DType::kBF16, "bf16", 1, 2},
    {DType::kTQ1_0, "tq1_0", kQK_K, 2 + (kQK_K - 4 * kQK_K / 64) / 5 + kQK_K / 64},
    {DType::kTQ2_0, "tq2_0", kQK_K, 2 + kQK_K / 4},
    {DType::kMXFP4, "mxfp4", kQK, 1 + kQK / 2},
}};

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return t;
  return std::nullopt;
}

const DTypeInfo& dtype_info(DType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  LLMS_CHECK(false, "unknown DType " + std::to_string(static_cast<uint32_t>(type)));
  __builtin_unreachable();
}

std::string_view dtype_name(DType type) { return dtype_info(type).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& t : kTypes)
    if (lower == t.name) return t.type;
  return std::nullopt;
}

bool row_fits_blocks(DType type, int64_t n) { return n % dtype_info(type).block_size == 0; }

int64_t dtype_row_bytes(DType type, int64_t n) {
  const auto& info = dtype_info(type);
  LLMS_CHECK(n % info.block_size == 0, "row of " + std::to_string(n) + " is not whole blocks of " + info.name);
  return n / info.block_size * info.type_size;
}

}  // namespace llms
