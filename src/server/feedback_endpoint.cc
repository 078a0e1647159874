// POST /v1/feedback: a person's rating of an answer the server gave recently.
//   {"id": "chatcmpl-...", "rating": -1 | 0 | 1 (or 1..5 with feedback_scale stars),
//    "labels": ["complaint", ...], "comment": "..."}
// 200 {"id", "version", "recorded": true}; 400 for a bad body or rating, 404 for an id
// not served recently, 409 when the same key rated it already. It counts in the
// version's feedback metrics (deploy/feedback.h), in the canary decision when
// canary_feedback_min is set, and, with review sampling on, is written to the review
// log beside the answers.
#include <fmt/format.h>

#include "base/sha256.h"
#include "server/endpoints.h"

namespace llms {

std::string rater_id(std::string_view authorization) {
  if (authorization.empty()) return "";
  const Sha256Digest d = sha256(authorization);
  std::string hex;
  for (size_t i = 0; i < 8; ++i) hex += fmt::format("{:02x}", d[i]);
  return hex;
}

namespace {

std::optional<ApiError> parse_feedback(const Json& b, Feedback* f) {
  if (!has_field(b, "id")) return bad_request("'id' (the request id to rate) is required", "id");
  if (auto e = read_string(b, "id", &f->request_id)) return e;
  if (!has_field(b, "rating")) return bad_request("'rating' is required", "rating");
  int64_t rating = 0;
  if (auto e = read_int(b, "rating", -1, 5, &rating)) return e;
  f->rating = static_cast<int>(rating);
  if (has_field(b, "labels")) {
    if (!b["labels"].is_array()) return bad_request("'labels' must be a list of strings", "labels");
    for (const Json& l : b["labels"]) {
      if (!l.is_string()) return bad_request("'labels' must be a list of strings", "labels");
      f->labels.push_back(l.get<std::string>());
    }
  }
  return read_string(b, "comment", &f->comment);
}

}  // namespace

void handle_feedback(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  auto fail = [&](const ApiError& e) { ex->respond(api_error_response(e)); };
  Json body;
  if (auto e = parse_json_object(req.body, &body)) return fail(*e);
  Feedback f;
  if (auto e = parse_feedback(body, &f)) return fail(*e);
  f.rater = rater_id(req.header("authorization"));
  auto version = ctx.feedback.record(f);
  if (!version.ok()) {
    ApiError e = api_error_from_status(version.status());
    if (e.status == 400) e.param = "rating";
    if (e.status == 400 && version.status().message().find("label") != std::string::npos) e.param = "labels";
    if (e.status == 400 && version.status().message().find("comment") != std::string::npos) e.param = "comment";
    return fail(e);
  }
  if (ctx.review) ctx.review->write_feedback(f, *version);
  // A rating of a canary's pair is new evidence: the deployer decides again now
  // rather than at its next tick.
  if (ctx.config.deploy.canary_auto.feedback_min > 0 && ctx.versions.candidate()) ctx.deployer.run([] {});
  ex->respond(json_response(200, Json{{"id", f.request_id}, {"version", *version}, {"recorded", true}}));
}

}  // namespace llms
