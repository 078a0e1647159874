#include "eval/task_score.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/utf8.h"

namespace llms {
namespace {

// Python's str.isspace(), which str.split() and str.strip() use.
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The text's code points, whitespace dropped when `drop_space`.
std::u32string code_points(std::string_view s, bool drop_space) {
  std::u32string out;
  for (size_t pos = 0; pos < s.size();) {
    size_t used = 1;
    const char32_t c = utf8_decode(s, pos, &used);
    pos += used;
    if (!drop_space || !is_space(c)) out.push_back(c);
  }
  return out;
}

// The pieces of `s` between runs of whitespace (Python's str.split()).
std::vector<std::string> split_whitespace(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t pos = 0; pos < s.size();) {
    size_t used = 1;
    const char32_t c = utf8_decode(s, pos, &used);
    if (is_space(c)) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.append(s.substr(pos, used));
    }
    pos += used;
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::string strip(std::string_view s) {
  size_t begin = 0;
  size_t end = 0;  // one past the last non-space code point
  bool seen = false;
  for (size_t pos = 0; pos < s.size();) {
    size_t used = 1;
    const char32_t c = utf8_decode(s, pos, &used);
    if (!is_space(c)) {
      if (!seen) begin = pos;
      seen = true;
      end = pos + used;
    }
    pos += used;
  }
  return seen ? std::string(s.substr(begin, end - begin)) : std::string();
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_period_comma(char c) { return c == '.' || c == ','; }

// mteval's punctuation class [{-~[-` -&(-+:-@/].
bool is_13a_punct(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x7B && u <= 0x7E) || (u >= 0x5B && u <= 0x60) || (u >= 0x20 && u <= 0x26) ||
         (u >= 0x28 && u <= 0x2B) || (u >= 0x3A && u <= 0x40) || u == '/';
}

// The regular expressions of 13a, each applied left to right without overlaps as
// re.sub does. Every class is ASCII, so bytes stand in for code points.
std::string split_punct(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (is_13a_punct(c)) {
      out += ' ';
      out += c;
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// ([^0-9])([.,]) -> "\1 \2 "; ([.,])([^0-9]) -> " \1 \2"; ([0-9])(-) -> "\1 \2 ".
enum class PairRule { kAfterNonDigit, kBeforeNonDigit, kDashAfterDigit };

std::string split_pairs(const std::string& s, PairRule rule) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size()) {
      const char a = s[i];
      const char b = s[i + 1];
      const bool match = rule == PairRule::kAfterNonDigit    ? !is_digit(a) && is_period_comma(b)
                         : rule == PairRule::kBeforeNonDigit ? is_period_comma(a) && !is_digit(b)
                                                             : is_digit(a) && b == '-';
      if (match) {
        if (rule == PairRule::kBeforeNonDigit) out += ' ';
        out += a;
        out += ' ';
        out += b;
        if (rule != PairRule::kBeforeNonDigit) out += ' ';
        i += 2;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

template <typename Key>
void count_matches(const std::map<Key, int64_t>& hyp, const std::map<Key, int64_t>& ref, int64_t* total,
                   int64_t* correct) {
  for (const auto& [gram, n] : hyp) {
    *total += n;
    const auto it = ref.find(gram);
    if (it != ref.end()) *correct += std::min(n, it->second);
  }
}

std::map<std::vector<std::string>, int64_t> word_ngrams(const std::vector<std::string>& tokens, size_t n) {
  std::map<std::vector<std::string>, int64_t> out;
  for (size_t i = 0; i + n <= tokens.size(); ++i) ++out[{tokens.begin() + i, tokens.begin() + i + n}];
  return out;
}

std::map<std::u32string, int64_t> char_ngrams(const std::u32string& chars, size_t n) {
  std::map<std::u32string, int64_t> out;
  for (size_t i = 0; i + n <= chars.size(); ++i) ++out[chars.substr(i, n)];
  return out;
}

int64_t sum_counts(const std::map<std::u32string, int64_t>& m) {
  int64_t s = 0;
  for (const auto& [g, n] : m) s += n;
  return s;
}

}  // namespace

void BleuStats::add(const BleuStats& o) {
  sys_len += o.sys_len;
  ref_len += o.ref_len;
  for (size_t n = 0; n < 4; ++n) {
    correct[n] += o.correct[n];
    total[n] += o.total[n];
  }
}

std::vector<std::string> tokenize_13a(std::string_view text) {
  std::string line(text);
  while (!line.empty()) {  // rstrip
    const size_t start = line.size() - 1;
    size_t lead = start;
    while (lead > 0 && (static_cast<unsigned char>(line[lead]) & 0xC0) == 0x80) --lead;
    size_t used = 1;
    if (!is_space(utf8_decode(line, lead, &used)) || lead + used != line.size()) break;
    line.resize(lead);
  }
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  line = split_punct(" " + line + " ");
  line = split_pairs(line, PairRule::kAfterNonDigit);
  line = split_pairs(line, PairRule::kBeforeNonDigit);
  line = split_pairs(line, PairRule::kDashAfterDigit);
  return split_whitespace(line);
}

BleuStats bleu_stats(std::string_view hypothesis, std::string_view reference) {
  const std::vector<std::string> hyp = tokenize_13a(hypothesis);
  const std::vector<std::string> ref = tokenize_13a(reference);
  BleuStats s;
  s.sys_len = static_cast<int64_t>(hyp.size());
  s.ref_len = static_cast<int64_t>(ref.size());
  for (size_t n = 1; n <= 4; ++n) count_matches(word_ngrams(hyp, n), word_ngrams(ref, n), &s.total[n - 1], &s.correct[n - 1]);
  return s;
}

BleuScore bleu_from_stats(const BleuStats& s) {
  BleuScore b;
  b.sys_len = s.sys_len;
  b.ref_len = s.ref_len;
  b.brevity_penalty = s.sys_len >= s.ref_len ? 1.0
                      : s.sys_len > 0        ? std::exp(1.0 - static_cast<double>(s.ref_len) / s.sys_len)
                                             : 0.0;
  if (std::all_of(s.correct.begin(), s.correct.end(), [](int64_t c) { return c == 0; })) return b;
  double smooth = 1;
  for (size_t n = 0; n < 4; ++n) {
    if (s.total[n] == 0) break;  // the orders left keep precision 0: the score is 0
    if (s.correct[n] == 0) {
      smooth *= 2;
      b.precisions[n] = 100.0 / (smooth * s.total[n]);
    } else {
      b.precisions[n] = 100.0 * s.correct[n] / s.total[n];
    }
  }
  double log_sum = 0;
  for (double p : b.precisions) log_sum += p > 0 ? std::log(p) : -9999999999.0;  // sacrebleu's my_log
  b.score = b.brevity_penalty * std::exp(log_sum / 4);
  return b;
}

double corpus_chrf(const std::vector<TaskPair>& pairs) {
  constexpr int kOrder = 6;
  constexpr double kBeta2 = 4.0;  // beta = 2
  std::array<std::array<int64_t, 3>, kOrder> stats{};  // hypothesis, reference, matched n-grams
  for (const TaskPair& p : pairs) {
    const std::u32string hyp = code_points(p.hypothesis, true);
    const std::u32string ref = code_points(p.reference, true);
    for (int n = 1; n <= kOrder; ++n) {
      const auto h = char_ngrams(hyp, n);
      const auto r = char_ngrams(ref, n);
      stats[n - 1][1] += sum_counts(r);
      count_matches(h, r, &stats[n - 1][0], &stats[n - 1][2]);
    }
  }
  double prec = 0;
  double rec = 0;
  int effective = 0;
  for (const auto& [n_hyp, n_ref, n_match] : stats) {
    if (n_hyp > 0 && n_ref > 0) {
      prec += static_cast<double>(n_match) / n_hyp;
      rec += static_cast<double>(n_match) / n_ref;
      ++effective;
    }
  }
  if (effective == 0) return 0;
  prec /= effective;
  rec /= effective;
  if (prec + rec == 0) return 0;
  return 100.0 * (1 + kBeta2) * prec * rec / (kBeta2 * prec + rec);
}

double exact_match(const std::vector<TaskPair>& pairs) {
  if (pairs.empty()) return 0;
  int64_t equal = 0;
  for (const TaskPair& p : pairs) equal += strip(p.hypothesis) == strip(p.reference) ? 1 : 0;
  return static_cast<double>(equal) / pairs.size();
}

TaskScores score_task(const std::vector<TaskPair>& pairs) {
  TaskScores t;
  t.pairs = static_cast<int64_t>(pairs.size());
  BleuStats total;
  for (const TaskPair& p : pairs) total.add(bleu_stats(p.hypothesis, p.reference));
  t.bleu = bleu_from_stats(total);
  t.chrf = corpus_chrf(pairs);
  t.exact_match = exact_match(pairs);
  return t;
}

Result<std::vector<TaskPair>> read_task_pairs(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read {}", path));
  std::vector<TaskPair> pairs;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("hypothesis") || !j["hypothesis"].is_string() || !j.contains("reference") ||
        !j["reference"].is_string()) {
      return invalid_argument(fmt::format("{}:{}: expected {{\"hypothesis\": string, \"reference\": string}}", path, number));
    }
    pairs.push_back({j["hypothesis"].get<std::string>(), j["reference"].get<std::string>()});
  }
  return pairs;
}

}  // namespace llms
