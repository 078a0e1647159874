#include "server/api_error.h"

#include <algorithm>
#include <cmath>

#include "server/json_util.h"

namespace llms {

ApiError bad_request(std::string message, std::string param, std::string code) {
  return ApiError{400, "invalid_request_error", std::move(message), std::move(param), std::move(code), 0};
}

ApiError not_found_error(std::string message, std::string code) {
  return ApiError{404, "invalid_request_error", std::move(message), "", std::move(code), 0};
}

ApiError internal_api_error(std::string message) {
  return ApiError{500, "server_error", std::move(message), "", "internal_error", 0};
}

ApiError slo_unattainable_error(std::string message, double retry_after_s) {
  return ApiError{503, "service_unavailable", std::move(message), "", "slo_unattainable", std::max(1.0, retry_after_s)};
}

ApiError unavailable_error(std::string message, double retry_after_s) {
  return ApiError{503, "service_unavailable", std::move(message), "", "model_lost", std::max(1.0, retry_after_s)};
}

ApiError api_error_from_status(const Status& s, bool draining, double retry_after_s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return bad_request(s.message());
    case StatusCode::kNotFound:
      return not_found_error(s.message());
    case StatusCode::kResourceExhausted:
      return ApiError{429, "rate_limit_error", s.message(), "", "queue_full", std::max(1.0, retry_after_s)};
    case StatusCode::kUnavailable:
      return ApiError{503, "service_unavailable", s.message(), "", draining ? "draining" : "overloaded",
                      std::max(1.0, retry_after_s)};
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAlreadyExists:
      return ApiError{409, "conflict", s.message(), "", "conflict", 0};
    default:
      return internal_api_error(s.message());
  }
}

std::string api_error_json(const ApiError& e) {
  Json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? Json(nullptr) : Json(e.param)},
              {"code", e.code.empty() ? Json(nullptr) : Json(e.code)}};
  return dump_json(Json{{"error", std::move(err)}});
}

HttpResponse api_error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = api_error_json(e);
  // Every 503 says when to come back (a client or balancer that backs off reads it).
  const double retry = e.status == 503 ? std::max(1.0, e.retry_after_s) : e.retry_after_s;
  if (retry > 0) r.headers.emplace_back("Retry-After", std::to_string(static_cast<int64_t>(std::ceil(retry))));
  return r;
}

HttpResponse transport_error_response(int status, const std::string& message) {
  ApiError e = bad_request(message);
  e.status = status;
  if (status == 413) e.code = "request_too_large";
  if (status >= 500) e.type = "server_error";
  if (status == 503) {  // the transport's only 503: a connection cap
    e.type = "service_unavailable";
    e.code = "too_many_connections";
  }
  return api_error_response(e);
}

}  // namespace llms
