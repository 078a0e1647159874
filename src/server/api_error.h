// ApiError: a failure as the client sees it — an HTTP status and the OpenAI error
// object {"error": {"message", "type", "param", "code"}}. Every failure the server
// reports goes through here, so the shapes and types stay consistent:
//   400 invalid_request_error  malformed JSON, wrong types, values out of range,
//                              prompt longer than the context (code context_length_exceeded)
//   404 invalid_request_error  unknown model (code model_not_found) or route
//   405 invalid_request_error  wrong method
//   413 invalid_request_error  body too large (code request_too_large)
//   429 rate_limit_error       queue full (code queue_full; Retry-After header)
//   503 service_unavailable    above a memory watermark (code overloaded), draining (code draining),
//                              or refused from the queue because its TTFT target is forecast to be
//                              missed (code slo_unattainable; Retry-After header), or the model
//                              can no longer run here (code model_lost: its tensor-parallel group failed)
//   500 server_error           internal failure
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>

#include "base/status.h"
#include "server/http_types.h"

namespace llms {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // "" → null
  std::string code;   // "" → null
  double retry_after_s = 0;  // > 0: a Retry-After header
};

ApiError bad_request(std::string message, std::string param = "", std::string code = "");
ApiError not_found_error(std::string message, std::string code = "");
ApiError internal_api_error(std::string message);
// A request the engine refused after queueing it (FinishReason::kRejected: its TTFT
// target was forecast to be missed).
ApiError slo_unattainable_error(std::string message, double retry_after_s);
// A request the engine failed because its model can no longer run here (a rank of its
// tensor-parallel group died): another replica may serve it.
ApiError unavailable_error(std::string message, double retry_after_s);

// From an engine Status: INVALID_ARGUMENT → 400, RESOURCE_EXHAUSTED → 429,
// UNAVAILABLE → 503 (draining when `draining`), NOT_FOUND → 404, other → 500.
ApiError api_error_from_status(const Status& status, bool draining = false, double retry_after_s = 0);

// {"error": {...}} as JSON text.
std::string api_error_json(const ApiError& e);
HttpResponse api_error_response(const ApiError& e);
// The transport's errors (malformed HTTP, 413, ...) in the same shape.
HttpResponse transport_error_response(int status, const std::string& message);

}  // namespace llms
