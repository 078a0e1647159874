// StopMatcher: finds stop strings in generated text as it streams, across token
// boundaries, and keeps them out of the output. Text that could still turn into a
// stop string is held back until it cannot (or until finish()).
// One per sequence; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llms {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds generated text; returns what may be emitted now. After a match, returns the
  // text before it and stopped() becomes true; later calls return nothing.
  std::string push(std::string_view text);
  // End of generation without a match: the held-back text.
  std::string finish();

  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace llms
