// Redactor: what the review log never holds. Built-in rules replace e-mail addresses
// ("[email]"), card numbers (13-19 digits, spaces or dashes between, passing the Luhn
// check: "[card]") and phone numbers (runs of 9-15 digits with + ( ) . - or spaces
// between: "[phone]"); each configured regular expression (ECMAScript syntax, one per
// line of --review-redact) replaces its matches with "[redacted]". Rules run in that
// order over every text the log writes.
//
// Thread-safety: immutable after make(); apply() from any thread.
#pragma once

#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace llms {

class Redactor {
 public:
  // `patterns`: regular expressions, one per line (blank lines skipped);
  // INVALID_ARGUMENT naming a pattern that does not compile.
  static Result<Redactor> make(const std::string& patterns);
  std::string apply(std::string_view text) const;

 private:
  std::vector<std::regex> custom_;
};

}  // namespace llms
