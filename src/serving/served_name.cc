#include "serving/served_name.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace llms {

Status check_served_name(std::string_view name, std::string_view what) {
  constexpr size_t kMax = 128;
  const bool plain = name.size() <= kMax && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("._-:/@+").find(c) != std::string_view::npos;
  });
  if (plain) return ok_status();
  return invalid_argument(
      fmt::format("{} name '{}': use at most 128 letters, digits and . _ - : / @ +", what, name.substr(0, kMax)));
}

}  // namespace llms
