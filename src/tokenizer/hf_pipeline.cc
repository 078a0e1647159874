#include "tokenizer/hf_pipeline.h"

#include <algorithm>

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "base/utf8.h"
#include "tokenizer/pre_tokenizer.h"

namespace llms {

namespace {

// Applies `f` to each valid UTF-8 run of `text`; invalid bytes are copied as they are.
template <typename F>
std::string map_valid_runs(std::string_view text, F&& f) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = valid_utf8_prefix(text.substr(pos));
    if (n == 0) {
      out.push_back(text[pos++]);
      continue;
    }
    f(text.substr(pos, n), &out);
    pos += n;
  }
  return out;
}

void replace_all(const Regex& re, std::string_view run, std::string_view content, std::string* out) {
  RegexScratch scratch;
  std::vector<SplitSpan> spans;
  find_split_spans(re, run, scratch, &spans);
  for (const SplitSpan& s : spans) {
    if (s.match && s.end > s.begin) {
      out->append(content);
    } else {
      out->append(run.substr(s.begin, s.end - s.begin));
    }
  }
}

void icu_transform(HfNormalizerStep::Kind kind, std::string_view run, std::string* out) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(run.data(), static_cast<int32_t>(run.size())));
  if (kind == HfNormalizerStep::Kind::kLowercase) {
    u.toLower(icu::Locale::getRoot());
  } else {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = nullptr;
    switch (kind) {
      case HfNormalizerStep::Kind::kNfc: n = icu::Normalizer2::getNFCInstance(status); break;
      case HfNormalizerStep::Kind::kNfkc: n = icu::Normalizer2::getNFKCInstance(status); break;
      case HfNormalizerStep::Kind::kNfd: n = icu::Normalizer2::getNFDInstance(status); break;
      default: n = icu::Normalizer2::getNFKDInstance(status); break;
    }
    if (U_FAILURE(status) || n == nullptr) {
      out->append(run);  // ICU without its data: leave the text as it is
      return;
    }
    icu::UnicodeString normalized = n->normalize(u, status);
    if (U_FAILURE(status)) {
      out->append(run);
      return;
    }
    u = std::move(normalized);
  }
  u.toUTF8String(*out);
}

bool is_white_space(std::string_view s, size_t pos, size_t* len) {
  const char32_t cp = utf8_decode(s, pos, len);
  return u_isUWhiteSpace(static_cast<UChar32>(cp));
}

std::string strip(std::string_view text, bool left, bool right) {
  if (left) text.remove_prefix(leading_whitespace(text));
  if (right) text.remove_suffix(trailing_whitespace(text));
  return std::string(text);
}

std::string apply_normalizer(const HfNormalizerStep& step, const Regex* regex, std::string_view text) {
  using Kind = HfNormalizerStep::Kind;
  switch (step.kind) {
    case Kind::kPrepend:
      return text.empty() ? std::string() : step.content + std::string(text);
    case Kind::kReplace:
      return map_valid_runs(text, [&](std::string_view run, std::string* out) { replace_all(*regex, run, step.content, out); });
    case Kind::kStrip:
      return strip(text, step.strip_left, step.strip_right);
    default:
      return map_valid_runs(text, [&](std::string_view run, std::string* out) { icu_transform(step.kind, run, out); });
  }
}

// The (begin, end, keep) pieces of a split, as tokenizers' NormalizedString::split
// computes them from the matches.
struct Cut {
  size_t begin;
  size_t end;
  bool removed;
};

std::vector<Cut> apply_behavior(const std::vector<SplitSpan>& spans, HfSplitBehavior behavior, bool invert) {
  std::vector<Cut> cuts;
  bool previous_match = false;
  auto match_of = [&](const SplitSpan& s) { return s.match != invert; };
  switch (behavior) {
    case HfSplitBehavior::kIsolated:
      for (const auto& s : spans) cuts.push_back(Cut{s.begin, s.end, false});
      break;
    case HfSplitBehavior::kRemoved:
      for (const auto& s : spans) cuts.push_back(Cut{s.begin, s.end, match_of(s)});
      break;
    case HfSplitBehavior::kContiguous:
      for (const auto& s : spans) {
        const bool m = match_of(s);
        if (m == previous_match && !cuts.empty()) {
          cuts.back().end = s.end;
        } else {
          cuts.push_back(Cut{s.begin, s.end, false});
        }
        previous_match = m;
      }
      break;
    case HfSplitBehavior::kMergedWithPrevious:
      for (const auto& s : spans) {
        const bool m = match_of(s);
        if (m && !previous_match && !cuts.empty()) {
          cuts.back().end = s.end;
        } else {
          cuts.push_back(Cut{s.begin, s.end, false});
        }
        previous_match = m;
      }
      break;
    case HfSplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        const bool m = match_of(*it);
        if (m && !previous_match && !cuts.empty()) {
          cuts.back().begin = it->begin;
        } else {
          cuts.push_back(Cut{it->begin, it->end, false});
        }
        previous_match = m;
      }
      std::reverse(cuts.begin(), cuts.end());
      break;
  }
  return cuts;
}

}  // namespace

size_t leading_whitespace(std::string_view s) {
  size_t begin = 0, n = 0;
  while (begin < s.size() && is_white_space(s, begin, &n)) begin += n;
  return begin;
}

size_t trailing_whitespace(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    size_t n = 0;
    if (!is_white_space(s, start, &n) || start + n != end) break;
    end = start;
  }
  return s.size() - end;
}

std::string replace_spaces(std::string_view text, std::string_view replacement, bool prefix) {
  std::string out;
  out.reserve(text.size() + text.size() / 2 + replacement.size());
  if (prefix) out.append(replacement);
  for (const char c : text) {
    if (c == ' ') {
      out.append(replacement);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

HfTextPipeline::~HfTextPipeline() = default;

Result<std::unique_ptr<HfTextPipeline>> HfTextPipeline::create(const HfTokenizerSpec& spec) {
  std::unique_ptr<HfTextPipeline> p(new HfTextPipeline());
  for (const HfNormalizerStep& n : spec.normalizer) {
    Step s;
    s.normalizer = n;
    if (n.kind == HfNormalizerStep::Kind::kReplace) {
      LLMS_ASSIGN_OR_RETURN(Regex re, Regex::compile(n.pattern));
      s.regex = std::make_unique<Regex>(std::move(re));
    }
    p->normalizer_.push_back(std::move(s));
  }
  for (const HfPreTokenizerStep& t : spec.pre_tokenizer) {
    Step s;
    s.pre = t;
    if (t.kind == HfPreTokenizerStep::Kind::kSplit) {
      LLMS_ASSIGN_OR_RETURN(Regex re, Regex::compile(t.pattern));
      s.regex = std::make_unique<Regex>(std::move(re));
    }
    p->pre_tokenizer_.push_back(std::move(s));
  }
  return p;
}

std::string HfTextPipeline::normalize(std::string_view text) const {
  std::string s(text);
  for (const Step& step : normalizer_) s = apply_normalizer(step.normalizer, step.regex.get(), s);
  return s;
}

void HfTextPipeline::split(const Step& step, std::string_view piece, std::vector<std::string>* out) const {
  RegexScratch scratch;
  std::vector<SplitSpan> spans;
  size_t pos = 0;
  while (pos < piece.size()) {
    const size_t n = valid_utf8_prefix(piece.substr(pos));
    if (n == 0) {  // an invalid byte: a piece by itself
      out->emplace_back(piece.substr(pos++, 1));
      continue;
    }
    const std::string_view run = piece.substr(pos, n);
    pos += n;
    spans.clear();
    find_split_spans(*step.regex, run, scratch, &spans);
    for (const Cut& c : apply_behavior(spans, step.pre.behavior, step.pre.invert)) {
      if (!c.removed && c.end > c.begin) out->emplace_back(run.substr(c.begin, c.end - c.begin));
    }
  }
}

void HfTextPipeline::pre_tokenize(std::string_view text, bool at_start, std::vector<std::string>* pieces) const {
  std::vector<std::string> current(1, std::string(text));
  std::vector<std::string> next;
  for (const Step& step : pre_tokenizer_) {
    next.clear();
    for (size_t i = 0; i < current.size(); ++i) {
      std::string& piece = current[i];
      switch (step.pre.kind) {
        case HfPreTokenizerStep::Kind::kSplit:
          split(step, piece, &next);
          continue;
        case HfPreTokenizerStep::Kind::kPrefixSpace:
          if (piece.empty() || piece.front() != ' ') piece = " " + piece;
          break;
        case HfPreTokenizerStep::Kind::kMetaspace: {
          piece = replace_spaces(piece, step.pre.replacement);
          const bool first = at_start && i == 0;
          const bool prepend = step.pre.prepend == HfPreTokenizerStep::Prepend::kAlways ||
                               (step.pre.prepend == HfPreTokenizerStep::Prepend::kFirst && first);
          if (prepend && !piece.starts_with(step.pre.replacement)) piece = step.pre.replacement + piece;
          break;
        }
      }
      next.push_back(std::move(piece));
    }
    current.swap(next);
  }
  for (std::string& p : current) {
    if (!p.empty()) pieces->push_back(std::move(p));
  }
}

}  // namespace llms
