// A client of a running server's admin API (docs/operations.md), for `llmserve deploy
// / rollback / versions --url`: one request, its status and JSON body.
//
// Thread-safety: a pure function of its arguments (one connection per call).
#pragma once

#include <string>

#include "base/status.h"

namespace llms {

struct AdminReply {
  int status = 0;
  std::string body;  // JSON
};

// `url` is http://HOST:PORT; `method` GET or POST. UNAVAILABLE when the server cannot
// be reached (the answer of a refused action is a reply, not an error).
Result<AdminReply> admin_call(const std::string& url, const std::string& token, const std::string& method,
                              const std::string& path, const std::string& body, double timeout_s);

// The first line of a token file, without surrounding white space.
Result<std::string> read_admin_token_file(const std::string& path);

}  // namespace llms
