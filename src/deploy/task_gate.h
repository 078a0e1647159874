// Task scores of a version on reference answers: each prompt of a reference file is
// answered greedily by the version, and the answers are scored against the file's
// references (eval/task_score.h: BLEU-4, chrF, exact match). The quality gate runs it
// on a candidate when --gate-reference names a file and refuses a candidate below a
// threshold; `llmserve eval-task` prints the same scores for one model or two.
//
// A reference file has one JSON object per line: {"prompt": TEXT, "reference": TEXT}
// or {"messages": [{"role", "content"}...], "reference": TEXT} (the version's chat
// template renders the messages).
//
// Thread-safety: functions of their arguments; answering submits to the version's
// engine (thread-safe) and waits on the caller's thread.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "deploy/serving_version.h"
#include "eval/task_score.h"

namespace llms {

struct TaskReference {
  std::string prompt;                 // or:
  std::vector<ChatMessage> messages;  // rendered by the chat template
  std::string reference;
};

// INVALID_ARGUMENT naming the line of a malformed entry; an empty file is an error.
Result<std::vector<TaskReference>> read_task_references(const std::string& path);

struct TaskAnswerOptions {
  int max_tokens = 256;  // per answer
  int in_flight = 8;     // requests submitted at once (the engine batches them)
};

// The version's greedy answer to each reference's prompt, in order.
Result<std::vector<std::string>> answer_greedily(ServingVersion& v, const std::vector<TaskReference>& refs,
                                                 const TaskAnswerOptions& opts);
// The answers paired with the references, and their scores.
Result<TaskScores> score_version(ServingVersion& v, const std::vector<TaskReference>& refs,
                                 const TaskAnswerOptions& opts, std::vector<TaskPair>* pairs = nullptr);

// The task part of the quality gate: off while reference_path is empty; a minimum of 0
// checks nothing (every score is >= 0).
struct TaskGateConfig {
  std::string reference_path;
  double min_bleu = 0;   // 0-100
  double min_chrf = 0;   // 0-100
  double min_exact = 0;  // share in [0, 1]
  int max_tokens = 256;  // per answer
  bool enabled() const { return !reference_path.empty(); }
};

// "BLEU 41.2 (min 38), chrF 60.1, exact match 0.250 over 20 references"; with
// `failed`, which minimum the scores missed ("" when none).
std::string describe_task_scores(const TaskScores& s, const TaskGateConfig& c, std::string* failed = nullptr);

// Scores `candidate` when the task gate is on and `g` passed so far, and folds the result into `g`: the
// scores, `passed` false below a minimum, and the figures in `reason`.
Status apply_task_gate(ServingVersion& candidate, const TaskGateConfig& c, GateResult* g);

}  // namespace llms
