#include "tokenizer/pre_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.h"
#include "base/utf8.h"

namespace llms {

namespace {

// Appends the non-empty pieces of `piece` cut at the matches of `re` (matches kept).
void split_one(const Regex& re, std::string_view piece, std::vector<std::string_view>* out, RegexScratch& scratch,
               std::vector<SplitSpan>& spans) {
  spans.clear();
  find_split_spans(re, piece, scratch, &spans);
  for (const SplitSpan& s : spans) {
    if (s.end > s.begin) out->push_back(piece.substr(s.begin, s.end - s.begin));
  }
}

}  // namespace

void find_split_spans(const Regex& re, std::string_view text, RegexScratch& scratch, std::vector<SplitSpan>* out) {
  size_t last = 0;    // end of what has been emitted
  size_t search = 0;  // where the next search starts
  while (search < text.size()) {
    const RegexMatch m = re.find(text, search, scratch);
    if (m.kind == RegexMatch::Kind::kNone) break;
    if (m.kind == RegexMatch::Kind::kError) {
      // PCRE2 hit a resource limit; the rest stays one piece rather than failing the
      // whole request. Patterns here are linear, so this needs megabytes of one class.
      log_warn("pre-tokenizer pattern gave up on a {}-byte piece; left unsplit", text.size() - last);
      break;
    }
    if (m.begin > last) out->push_back(SplitSpan{last, m.begin, false});
    out->push_back(SplitSpan{m.begin, m.end, true});
    last = m.end;
    if (m.end > m.begin) {
      search = m.end;
    } else {  // an empty match (a pure lookahead) marks a cut point; search on from the next character
      const int len = utf8_sequence_length(static_cast<uint8_t>(text[m.begin]));
      search = m.begin + static_cast<size_t>(std::max(len, 1));
    }
  }
  if (last < text.size()) out->push_back(SplitSpan{last, text.size(), false});
}

size_t valid_utf8_prefix(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const auto b = static_cast<uint8_t>(s[pos]);
    if (b < 0x80) {
      ++pos;
      continue;
    }
    size_t n = 0;
    const char32_t cp = utf8_decode(s, pos, &n);
    if (cp == 0xFFFD && !(n == 3 && s.substr(pos, 3) == "\xEF\xBF\xBD")) return pos;
    pos += n;
  }
  return pos;
}

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(std::string_view name) {
  const PreTokenizerSpec* spec = find_pre_tokenizer_spec(name);
  if (spec == nullptr) {
    return invalid_argument(fmt::format("unknown pre-tokenizer tokenizer.ggml.pre = '{}'; supported: {}", name,
                                        fmt::join(known_names(), ", ")));
  }
  std::unique_ptr<PreTokenizer> pt(new PreTokenizer());
  pt->name_ = std::string(name);
  pt->spec_ = spec;
  for (const std::string_view pattern : spec->patterns) {
    LLMS_ASSIGN_OR_RETURN(Regex re, Regex::compile(pattern));
    pt->regexes_.push_back(std::move(re));
  }
  return pt;
}

std::vector<std::string> PreTokenizer::known_names() {
  std::vector<std::string> names;
  for (const auto& spec : pre_tokenizer_specs()) {
    for (const auto n : spec.names) names.emplace_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void PreTokenizer::split_all(const Regex& re, const std::vector<std::string_view>& in,
                             std::vector<std::string_view>* out, RegexScratch& scratch) const {
  std::vector<SplitSpan> spans;
  for (const std::string_view piece : in) split_one(re, piece, out, scratch, spans);
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>* pieces) const {
  RegexScratch scratch;
  std::vector<std::string_view> a, b;
  std::vector<SplitSpan> spans;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = valid_utf8_prefix(text.substr(pos));
    if (n == 0) {  // an invalid byte: a piece by itself
      pieces->push_back(text.substr(pos, 1));
      ++pos;
      continue;
    }
    const std::string_view run = text.substr(pos, n);
    pos += n;
    if (regexes_.size() == 1) {
      split_one(regexes_[0], run, pieces, scratch, spans);
      continue;
    }
    a.assign(1, run);
    for (const Regex& re : regexes_) {
      b.clear();
      split_all(re, a, &b, scratch);
      a.swap(b);
    }
    pieces->insert(pieces->end(), a.begin(), a.end());
  }
}

}  // namespace llms
