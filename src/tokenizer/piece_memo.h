// PieceMemo: remembers, within one encode call, the ids each piece (word) was encoded
// to, so that a repeated word is copied instead of merged again. Words repeat a lot in
// real text; the memo lives only as long as the call, so the Tokenizer stays immutable.
//
// Thread-safety: one per call; not shared.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace llms {

class PieceMemo {
 public:
  // Appends the ids of `piece` to `out`: a copy of an earlier result for the same
  // piece, or what `encode(piece, out)` appends. `piece` must outlive the memo.
  template <typename Encode>
  void append(std::string_view piece, std::vector<int32_t>* out, Encode&& encode) {
    const auto it = seen_.find(piece);
    if (it != seen_.end()) {
      for (size_t i = it->second.first; i < it->second.second; ++i) {
        const int32_t id = (*out)[i];  // copied first: push_back may reallocate
        out->push_back(id);
      }
      return;
    }
    const size_t begin = out->size();
    encode(piece, out);
    seen_.emplace(piece, std::make_pair(begin, out->size()));
  }

 private:
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen_;  // piece → its ids in `out`
};

}  // namespace llms
