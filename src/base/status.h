// Status and Result<T>: how every failure caused by input (files, requests, flags,
// config) travels up to the user. Internal invariants use CHECK (check.h) instead.
//
// Thread-safety: values; safe to copy and move between threads.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace llms {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad flag, request field or config value
  kNotFound,            // missing file, key, tensor, model
  kDataLoss,            // malformed or truncated file
  kOutOfRange,          // value outside what the model/config supports
  kResourceExhausted,   // queue full, memory watermark, over budget
  kUnavailable,         // draining, not ready
  kDeadlineExceeded,
  kCancelled,
  kUnimplemented,       // a valid input we do not support (yet)
  kFailedPrecondition,
  kAlreadyExists,
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "DATA_LOSS: tensor 'x' data ends past end of file" style text for users.
  std::string to_string() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() { return Status(); }
Status invalid_argument(std::string msg);
Status not_found(std::string msg);
Status data_loss(std::string msg);
Status out_of_range(std::string msg);
Status resource_exhausted(std::string msg);
Status unavailable(std::string msg);
Status unimplemented(std::string msg);
Status failed_precondition(std::string msg);
Status already_exists(std::string msg);
Status internal_error(std::string msg);

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    LLMS_CHECK(!std::get<Status>(v_).ok(), "Result constructed from an OK status");
  }

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & {
    LLMS_CHECK(ok(), "value() on error: " + std::get<Status>(v_).to_string());
    return std::get<T>(v_);
  }
  const T& value() const& {
    LLMS_CHECK(ok(), "value() on error: " + std::get<Status>(v_).to_string());
    return std::get<T>(v_);
  }
  T&& value() && {
    LLMS_CHECK(ok(), "value() on error: " + std::get<Status>(v_).to_string());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace llms

#define LLMS_CONCAT_INNER(a, b) a##b
#define LLMS_CONCAT(a, b) LLMS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define LLMS_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::llms::Status llms_status_ = (expr);       \
    if (!llms_status_.ok()) return llms_status_; \
  } while (0)

// `LLMS_ASSIGN_OR_RETURN(auto x, make_x());` declares x or returns the error.
#define LLMS_ASSIGN_OR_RETURN(lhs, expr) \
  LLMS_ASSIGN_OR_RETURN_IMPL(LLMS_CONCAT(llms_result_, __LINE__), lhs, expr)
#define LLMS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
