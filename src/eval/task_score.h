// Task scores of answers against references, as sacrebleu 2.x computes them by
// default, so a figure here compares with one a team already tracks:
//
//  - BLEU-4: corpus BLEU on the '13a' tokenization (mteval-v13a: HTML entities
//    unescaped, punctuation split off, periods and commas split unless between
//    digits, a dash split after a digit), n-gram precisions clipped by the reference
//    counts and summed over the corpus, the brevity penalty exp(1 - r/c) when the
//    answers are shorter (c < r), and sacrebleu's default 'exp' smoothing: the k-th
//    n-gram order with no match counts 1 / (2^k * total). No match at all: 0.
//  - chrF: character n-grams of orders 1..6 (code points, whitespace removed),
//    statistics summed over the corpus, precision and recall averaged over the orders
//    both sides have, F-beta with beta = 2.
//  - exact match: the share of pairs equal once surrounding whitespace is stripped.
//
// BLEU and chrF are on sacrebleu's 0-100 scale; exact match is a share in [0, 1].
// One reference per answer. scripts/task-score-reference.py is the independent
// reference the tests compare with.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace llms {

// One answer with the text it is scored against.
struct TaskPair {
  std::string hypothesis;
  std::string reference;
};

// BLEU's sufficient statistics; they add over a corpus.
struct BleuStats {
  int64_t sys_len = 0;  // answer tokens
  int64_t ref_len = 0;  // reference tokens
  std::array<int64_t, 4> correct{};  // clipped matches per order 1..4
  std::array<int64_t, 4> total{};    // answer n-grams per order 1..4
  void add(const BleuStats& o);
};

struct BleuScore {
  double score = 0;                  // 0-100
  double brevity_penalty = 0;
  std::array<double, 4> precisions{};  // percent, after smoothing
  int64_t sys_len = 0;
  int64_t ref_len = 0;
};

struct TaskScores {
  BleuScore bleu;
  double chrf = 0;         // 0-100
  double exact_match = 0;  // [0, 1]
  int64_t pairs = 0;
};

// The 13a tokens of a line (sacrebleu strips trailing whitespace first).
std::vector<std::string> tokenize_13a(std::string_view line);

BleuStats bleu_stats(std::string_view hypothesis, std::string_view reference);
BleuScore bleu_from_stats(const BleuStats& stats);

// Every score of the corpus `pairs` (an empty corpus scores 0 everywhere).
TaskScores score_task(const std::vector<TaskPair>& pairs);
double corpus_chrf(const std::vector<TaskPair>& pairs);
double exact_match(const std::vector<TaskPair>& pairs);

// {"hypothesis", "reference"} per line (blank lines skipped); INVALID_ARGUMENT naming
// the line of a malformed one.
Result<std::vector<TaskPair>> read_task_pairs(const std::string& path);

}  // namespace llms
