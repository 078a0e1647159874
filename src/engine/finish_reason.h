// Why a request ended. Every request ends exactly once with one of these.
#pragma once

namespace llms {

enum class FinishReason {
  kStop,       // end-of-generation token or a stop string
  kLength,     // max_tokens or the context limit
  kTimeout,    // its deadline passed
  kCancelled,  // the client went away or asked
  kRejected,   // admission control refused it
  kError,      // an internal failure, reported with a message
};

inline const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kTimeout: return "timeout";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kRejected: return "rejected";
    case FinishReason::kError: return "error";
  }
  return "error";
}

}  // namespace llms
