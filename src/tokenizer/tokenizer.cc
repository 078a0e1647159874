#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "base/log.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_encoder.h"
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/piece_memo.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/spm.h"

namespace llms {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 '▁'

// End-of-turn texts of the common chat formats. Files often do not name these as
// EOS/EOT, yet generation must stop on them.
constexpr std::array<std::string_view, 9> kEndOfTurnTexts = {"<|eot_id|>",    "<|im_end|>",      "<|end|>",
                                                             "<end_of_turn>", "<|endoftext|>",   "<|eom_id|>",
                                                             "<EOT>",         "<|end_of_text|>", "<end_of_utterance>"};

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.substr(pos, 3) == kSpmSpace) {
      out.push_back(' ');
      pos += 3;
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

// "<0x0A>" → 0x0A; -1 when `text` is not of that form.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int v = 0;
  for (const char c : text.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') {
      v |= c - '0';
    } else if (c >= 'A' && c <= 'F') {
      v |= c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      v |= c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return v;
}

bool renders_empty(TokenType t) { return t == TokenType::kControl || t == TokenType::kUnknown; }

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& file) {
  LLMS_ASSIGN_OR_RETURN(Vocab vocab, Vocab::from_gguf(file));
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  tok->vocab_ = std::move(vocab);
  LLMS_RETURN_IF_ERROR(tok->init());
  return tok;
}

Status Tokenizer::init() {
  mark_end_of_generation();
  if (vocab_.model == VocabModel::kBpe) {
    std::string pre = vocab_.pre;
    if (pre.empty()) {
      log_warn("the file has no tokenizer.ggml.pre; using the GPT-2 pre-tokenizer");
      pre = "gpt-2";
    }
    LLMS_ASSIGN_OR_RETURN(pre_, PreTokenizer::create(pre));
    if (!vocab_.add_bos_in_metadata) vocab_.add_bos = pre_->spec().add_bos;
    LLMS_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::build(vocab_, pre_->spec().ignore_merges));
    bpe_ = std::make_unique<BpeModel>(std::move(bpe));
  } else {
    spm_ = std::make_unique<SpmModel>(vocab_);
  }
  if (vocab_.add_bos && vocab_.bos_id < 0) {
    log_warn("the vocabulary asks for a BOS token but names none; no BOS will be added");
  }
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const TokenData& t = vocab_.tokens[id];
    if (t.type == TokenType::kUserDefined) user_defined_.add(t.text, id);
    if (t.type == TokenType::kUserDefined || t.type == TokenType::kControl || t.type == TokenType::kUnknown) {
      special_.add(t.text, id);
    }
  }
  build_pieces();
  set_bos_eos_ids();
  return ok_status();
}

void Tokenizer::set_bos_eos_ids() {
  prefix_ids_.clear();
  suffix_ids_.clear();
  if (vocab_.add_bos && vocab_.bos_id >= 0) prefix_ids_.push_back(vocab_.bos_id);
  if (vocab_.add_eos && vocab_.eos_id >= 0) suffix_ids_.push_back(vocab_.eos_id);
}

Vocab Tokenizer::source_vocab() const {
  Vocab v = vocab_;
  for (const auto& [id, type] : retyped_) v.tokens[id].type = type;
  return v;
}

void Tokenizer::mark_end_of_generation() {
  end_of_generation_.assign(vocab_.tokens.size(), 0);
  for (const int32_t id : {vocab_.eos_id, vocab_.eot_id, vocab_.eom_id}) {
    if (vocab_.valid_id(id)) end_of_generation_[id] = 1;
  }
  for (const std::string_view text : kEndOfTurnTexts) {
    const int32_t id = vocab_.find(text);
    if (id < 0) continue;
    end_of_generation_[id] = 1;
    if (vocab_.tokens[id].type != TokenType::kControl) retyped_.emplace_back(id, vocab_.tokens[id].type);
    // An end-of-turn marker must not be typeable by users nor shown in output, even
    // where a converter left it as a normal or user-defined token.
    vocab_.tokens[id].type = TokenType::kControl;
  }
}

void Tokenizer::build_pieces() {
  pieces_.resize(vocab_.tokens.size());
  for (size_t id = 0; id < vocab_.tokens.size(); ++id) {
    const TokenData& t = vocab_.tokens[id];
    std::string& piece = pieces_[id];
    switch (t.type) {
      case TokenType::kControl:
      case TokenType::kUnknown:
        break;  // rendered only on request, from token_text()
      case TokenType::kUserDefined:
        piece = t.text;
        break;
      case TokenType::kByte: {
        const int b = parse_byte_token(t.text);
        piece = b >= 0 ? std::string(1, static_cast<char>(b)) : t.text;
        break;
      }
      default:
        if (vocab_.model == VocabModel::kSpm) {
          piece = unescape_spaces(t.text);
        } else {
          byte_level_decode(t.text, &piece);
        }
    }
  }
  max_piece_bytes_ = 0;
  for (size_t id = 0; id < vocab_.tokens.size(); ++id) {
    max_piece_bytes_ = std::max({max_piece_bytes_, pieces_[id].size(), vocab_.tokens[id].text.size()});
  }
}

void Tokenizer::encode_text(std::string_view text, bool after_special, std::vector<int32_t>* out) const {
  if (spm_ != nullptr) {
    spm_->encode(replace_spaces(text, kSpmSpace, vocab_.add_space_prefix && after_special), out);
    return;
  }
  std::vector<std::string_view> pieces;
  pre_->split(text, &pieces);
  BpeScratch scratch;
  PieceMemo memo;
  for (const std::string_view piece : pieces) {
    memo.append(piece, out, [&](std::string_view p, std::vector<int32_t>* o) { bpe_->encode_piece(p, o, scratch); });
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& opts) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (opts.add_bos) out.insert(out.end(), prefix_ids_.begin(), prefix_ids_.end());
  const SpecialTokenMatcher& matcher = opts.parse_special ? special_ : user_defined_;
  if (hf_ != nullptr) {
    hf_->encode(text, opts.parse_special, &out);
  } else if (matcher.empty()) {
    if (!text.empty()) encode_text(text, /*after_special=*/true, &out);
  } else {
    std::vector<TextFragment> fragments;
    matcher.split(text, &fragments);
    bool after_special = true;  // the start of the text counts as a boundary
    for (const TextFragment& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
        after_special = true;
      } else {
        encode_text(f.text, after_special, &out);
        after_special = false;
      }
    }
  }
  if (opts.add_bos) out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& opts) const {
  std::string out;
  bool strip = opts.strip_leading_space && strips_leading_space();
  for (const int32_t id : ids) {
    std::string_view piece = piece_view(id, opts.render_special);
    if (piece.empty()) continue;
    if (strip) {
      if (piece.front() == ' ') piece.remove_prefix(1);
      strip = false;
    }
    out.append(piece);
  }
  return out;
}

std::string_view Tokenizer::piece_view(int32_t id, bool render_special) const {
  if (!vocab_.valid_id(id)) return std::string_view();
  if (render_special && renders_empty(vocab_.tokens[id].type)) return vocab_.tokens[id].text;
  return pieces_[id];
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  return vocab_.valid_id(id) ? vocab_.tokens[id].text : kEmpty;
}

TokenType Tokenizer::token_type(int32_t id) const {
  return vocab_.valid_id(id) ? vocab_.tokens[id].type : TokenType::kUndefined;
}

bool Tokenizer::is_control(int32_t id) const { return vocab_.valid_id(id) && renders_empty(vocab_.tokens[id].type); }

bool Tokenizer::is_end_of_generation(int32_t id) const { return vocab_.valid_id(id) && end_of_generation_[id] != 0; }

const std::string& Tokenizer::pre_tokenizer_name() const {
  static const std::string kNone;
  return pre_ != nullptr ? pre_->name() : kNone;
}

}  // namespace llms
