#include "deploy/admin_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cctype>
#include <fstream>

namespace llms {

Result<AdminReply> admin_call(const std::string& url, const std::string& token, const std::string& method,
                              const std::string& path, const std::string& body, double timeout_s) {
  httplib::Client client(url);
  if (!client.is_valid()) return invalid_argument(fmt::format("--url '{}' is not http://HOST:PORT", url));
  const auto secs = static_cast<time_t>(timeout_s);
  client.set_read_timeout(secs, 0);
  client.set_write_timeout(secs, 0);
  const httplib::Headers headers = {{"Authorization", "Bearer " + token}};
  httplib::Result r = method == "GET" ? client.Get(path, headers) : client.Post(path, headers, body, "application/json");
  if (!r) return unavailable(fmt::format("cannot reach {}{}: {}", url, path, httplib::to_string(r.error())));
  return AdminReply{r->status, r->body};
}

Result<std::string> read_admin_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read the token file {}", path));
  std::string token;
  std::getline(in, token);
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!token.empty() && space(token.back())) token.pop_back();
  while (!token.empty() && space(token.front())) token.erase(token.begin());
  if (token.empty()) return invalid_argument(fmt::format("the token file {} is empty", path));
  return token;
}

}  // namespace llms
