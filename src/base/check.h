// CHECK: broken internal invariants abort with file:line and a message. Never use it
// for anything a user's input can cause; return a Status instead (status.h).
#pragma once

#include <string>

namespace llms::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);
}  // namespace llms::detail

#define LLMS_CHECK(cond, ...)                                                        \
  do {                                                                               \
    if (__builtin_expect(!(cond), 0))                                                \
      ::llms::detail::check_failed(__FILE__, __LINE__, #cond, std::string(__VA_ARGS__)); \
  } while (0)

#ifdef NDEBUG
#define LLMS_DCHECK(cond, ...) \
  do {                         \
  } while (0)
#else
#define LLMS_DCHECK(cond, ...) LLMS_CHECK(cond, __VA_ARGS__)
#endif
