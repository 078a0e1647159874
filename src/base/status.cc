#include "base/status.h"

#include <cstdio>
#include <cstdlib>

namespace llms {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status invalid_argument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
Status not_found(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
Status data_loss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
Status out_of_range(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
Status resource_exhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
Status unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
Status unimplemented(std::string msg) { return {StatusCode::kUnimplemented, std::move(msg)}; }
Status failed_precondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
Status already_exists(std::string msg) { return {StatusCode::kAlreadyExists, std::move(msg)}; }
Status internal_error(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

namespace detail {
void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "CHECK failed at %s:%d: %s%s%s\n", file, line, cond,
               msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace detail

}  // namespace llms
