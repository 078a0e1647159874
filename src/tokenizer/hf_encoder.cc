#include "tokenizer/hf_encoder.h"

#include <cctype>
#include <string>

#include "base/utf8.h"
#include "tokenizer/piece_memo.h"

namespace llms {

namespace {

// What tokenizers counts as part of a word next to a single_word token.
bool is_word_char(char32_t c) { return (c < 0x80 && (std::isalnum(static_cast<int>(c)) != 0)) || c == '_'; }

char32_t last_char(std::string_view s) {
  if (s.empty()) return 0;
  size_t start = s.size() - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  size_t n = 0;
  return utf8_decode(s, start, &n);
}

char32_t first_char(std::string_view s) {
  if (s.empty()) return 0;
  size_t n = 0;
  return utf8_decode(s, 0, &n);
}

// Merges adjacent text fragments (views into one text, so adjacent views are contiguous).
void merge_text(std::vector<TextFragment>* f) {
  std::vector<TextFragment> out;
  for (const TextFragment& x : *f) {
    if (x.token < 0 && !out.empty() && out.back().token < 0 &&
        out.back().text.data() + out.back().text.size() == x.text.data()) {
      out.back().text = std::string_view(out.back().text.data(), out.back().text.size() + x.text.size());
    } else {
      out.push_back(x);
    }
  }
  f->swap(out);
}

}  // namespace

void AddedTokenMatcher::add(const HfAddedToken& token, std::string_view text) {
  matcher_.add(text, token.id);
  if (token.lstrip || token.rstrip || token.single_word) {
    flags_[token.id] = Flags{token.lstrip, token.rstrip, token.single_word};
  }
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextFragment>* out) const {
  if (matcher_.empty()) {
    if (!text.empty()) out->push_back(TextFragment{text, -1});
    return;
  }
  std::vector<TextFragment> f;
  matcher_.split(text, &f);
  if (!flags_.empty()) {
    for (size_t i = 0; i < f.size(); ++i) {
      if (f[i].token < 0) continue;
      const auto it = flags_.find(f[i].token);
      if (it == flags_.end() || !it->second.single_word) continue;
      const size_t begin = static_cast<size_t>(f[i].text.data() - text.data());
      const size_t end = begin + f[i].text.size();
      if (is_word_char(last_char(text.substr(0, begin))) || is_word_char(first_char(text.substr(end)))) {
        f[i].token = -1;  // inside a word: plain text
      }
    }
    merge_text(&f);
    for (size_t i = 0; i < f.size(); ++i) {
      if (f[i].token < 0) continue;
      const auto it = flags_.find(f[i].token);
      if (it == flags_.end()) continue;
      if (it->second.lstrip && i > 0 && f[i - 1].token < 0) {
        std::string_view& prev = f[i - 1].text;
        prev = prev.substr(0, prev.size() - trailing_whitespace(prev));
      }
      if (it->second.rstrip && i + 1 < f.size() && f[i + 1].token < 0) {
        std::string_view& next = f[i + 1].text;
        next.remove_prefix(leading_whitespace(next));
      }
    }
  }
  for (const TextFragment& x : f) {
    if (x.token >= 0 || !x.text.empty()) out->push_back(x);
  }
}

HfEncoder::~HfEncoder() = default;

Result<std::unique_ptr<HfEncoder>> HfEncoder::create(const HfTokenizerSpec& spec, const Vocab& vocab) {
  std::unique_ptr<HfEncoder> e(new HfEncoder());
  LLMS_ASSIGN_OR_RETURN(e->pipeline_, HfTextPipeline::create(spec));
  for (const HfAddedToken& t : spec.added_tokens) {
    const std::string text = t.normalized ? e->pipeline_->normalize(t.content) : t.content;
    e->matchers_[t.normalized][1].add(t, text);
    if (!t.special) e->matchers_[t.normalized][0].add(t, text);
  }
  const HfModelSpec& m = spec.model;
  if (m.kind == HfModelSpec::Kind::kUnigram) {
    e->unigram_ = std::make_unique<UnigramModel>(vocab, m.byte_fallback);
    return e;
  }
  BpeOptions opts;
  opts.ignore_merges = m.ignore_merges;
  opts.byte_level = spec.byte_level;
  opts.byte_fallback = m.byte_fallback;
  opts.fuse_unk = m.fuse_unk;
  opts.continuing_subword_prefix = m.continuing_subword_prefix;
  opts.end_of_word_suffix = m.end_of_word_suffix;
  opts.strict_merges = true;
  opts.merges_name = "model.merges";
  if (spec.byte_level && (!opts.continuing_subword_prefix.empty() || !opts.end_of_word_suffix.empty())) {
    return unimplemented("tokenizer.json: continuing_subword_prefix or end_of_word_suffix with ByteLevel");
  }
  auto bpe = BpeModel::build(vocab, opts);
  if (!bpe.ok()) return Status(bpe.status().code(), "tokenizer.json: " + bpe.status().message());
  e->bpe_ = std::make_unique<BpeModel>(std::move(bpe).value());
  return e;
}

void HfEncoder::encode_fragment(std::string_view text, bool at_start, std::vector<int32_t>* out) const {
  std::vector<std::string> pieces;
  pipeline_->pre_tokenize(text, at_start, &pieces);
  BpeScratch scratch;
  PieceMemo memo;
  for (const std::string& piece : pieces) {
    memo.append(piece, out, [&](std::string_view p, std::vector<int32_t>* o) {
      if (unigram_ != nullptr) {
        unigram_->encode(p, o);
      } else {
        bpe_->encode_piece(p, o, scratch);
      }
    });
  }
}

void HfEncoder::encode(std::string_view text, bool parse_special, std::vector<int32_t>* out) const {
  std::vector<TextFragment> raw;
  matchers_[0][parse_special].split(text, &raw);
  std::vector<TextFragment> normalized;
  for (const TextFragment& f : raw) {
    if (f.token >= 0) {
      out->push_back(f.token);
      continue;
    }
    const bool fragment_at_start = f.text.data() == text.data();
    const std::string norm = pipeline_->has_normalizer() ? pipeline_->normalize(f.text) : std::string(f.text);
    normalized.clear();
    matchers_[1][parse_special].split(norm, &normalized);
    for (const TextFragment& g : normalized) {
      if (g.token >= 0) {
        out->push_back(g.token);
      } else {
        encode_fragment(g.text, fragment_at_start && g.text.data() == norm.data(), out);
      }
    }
  }
}

}  // namespace llms
