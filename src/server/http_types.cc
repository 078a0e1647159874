#include "server/http_types.h"

namespace llms {

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return "";
}

}  // namespace llms
