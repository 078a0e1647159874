#include "deploy/task_gate.h"

#include <fmt/format.h>

#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>

namespace llms {
namespace {

constexpr int64_t kAnswerTimeoutMs = 600'000;

Result<TaskReference> parse_reference(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return invalid_argument("not a JSON object");
  TaskReference r;
  if (!j.contains("reference") || !j["reference"].is_string()) return invalid_argument("\"reference\" must be a string");
  r.reference = j["reference"].get<std::string>();
  if (j.contains("prompt")) {
    if (!j["prompt"].is_string()) return invalid_argument("\"prompt\" must be a string");
    r.prompt = j["prompt"].get<std::string>();
    return r;
  }
  if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty()) {
    return invalid_argument("needs \"prompt\" (a string) or \"messages\" (a non-empty array)");
  }
  for (const auto& m : j["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return invalid_argument("each message needs \"role\" and \"content\" strings");
    }
    r.messages.emplace_back(m["role"].get<std::string>(), m["content"].get<std::string>());
  }
  return r;
}

Result<std::vector<int32_t>> prompt_tokens(const ServingVersion& v, const TaskReference& r) {
  const Tokenizer& tok = v.tokenizer();
  if (r.messages.empty()) {
    EncodeOptions enc;
    enc.add_bos = tok.add_bos();
    return tok.encode(r.prompt, enc);
  }
  LLMS_ASSIGN_OR_RETURN(const std::string name, resolve_chat_template(v.chat_template(), tok));
  LLMS_ASSIGN_OR_RETURN(const std::string text, apply_model_chat_template(tok, r.messages, true, name));
  return encode_chat_prompt(tok, text);
}

// The text of one finished request.
Result<std::string> collect(RequestHandle& h, size_t index) {
  std::string text;
  for (RequestEvent ev;;) {
    if (!h.next(&ev, kAnswerTimeoutMs)) return unavailable(fmt::format("reference {}: no answer in time", index + 1));
    if (const auto* t = std::get_if<TokenEvent>(&ev)) {
      text += t->text;
      continue;
    }
    const auto& f = std::get<FinishEvent>(ev);
    if (f.reason != FinishReason::kLength && f.reason != FinishReason::kStop) {
      return unavailable(fmt::format("reference {}: the answer ended {}: {}", index + 1, finish_reason_name(f.reason),
                                     f.message));
    }
    return text + f.text;
  }
}

}  // namespace

Result<std::vector<TaskReference>> read_task_references(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read the reference file {}", path));
  std::vector<TaskReference> refs;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto r = parse_reference(line);
    if (!r.ok()) return invalid_argument(fmt::format("{}:{}: {}", path, number, r.status().message()));
    refs.push_back(std::move(r).value());
  }
  if (refs.empty()) return invalid_argument(fmt::format("the reference file {} has no entries", path));
  return refs;
}

Result<std::vector<std::string>> answer_greedily(ServingVersion& v, const std::vector<TaskReference>& refs,
                                                 const TaskAnswerOptions& opts) {
  std::vector<std::string> answers(refs.size());
  std::deque<std::pair<size_t, std::shared_ptr<RequestHandle>>> running;
  auto finish_one = [&]() -> Status {
    auto [index, handle] = std::move(running.front());
    running.pop_front();
    LLMS_ASSIGN_OR_RETURN(answers[index], collect(*handle, index));
    return ok_status();
  };
  for (size_t i = 0; i < refs.size(); ++i) {
    auto tokens = prompt_tokens(v, refs[i]);
    if (!tokens.ok()) return invalid_argument(fmt::format("reference {}: {}", i + 1, tokens.status().message()));
    RequestParams p;
    p.prompt = std::move(tokens).value();
    p.max_tokens = opts.max_tokens;
    p.sampling.temperature = 0.0f;
    p.lane = Lane::kBatch;
    auto handle = v.engine().submit(p);
    if (!handle.ok()) return handle.status().with_context(fmt::format("reference {}", i + 1));
    running.emplace_back(i, std::move(handle).value());
    if (static_cast<int>(running.size()) >= std::max(1, opts.in_flight)) LLMS_RETURN_IF_ERROR(finish_one());
  }
  while (!running.empty()) LLMS_RETURN_IF_ERROR(finish_one());
  return answers;
}

Result<TaskScores> score_version(ServingVersion& v, const std::vector<TaskReference>& refs,
                                 const TaskAnswerOptions& opts, std::vector<TaskPair>* pairs) {
  LLMS_ASSIGN_OR_RETURN(std::vector<std::string> answers, answer_greedily(v, refs, opts));
  std::vector<TaskPair> scored;
  for (size_t i = 0; i < refs.size(); ++i) scored.push_back({std::move(answers[i]), refs[i].reference});
  const TaskScores s = score_task(scored);
  if (pairs) *pairs = std::move(scored);
  return s;
}

std::string describe_task_scores(const TaskScores& s, const TaskGateConfig& c, std::string* failed) {
  std::string missed;
  auto figure = [&](const char* name, double value, double min, const char* format) {
    std::string out = fmt::format(fmt::runtime(format), name, value);
    if (min > 0) out += fmt::format(" (min {})", min);
    if (value < min) {
      missed += fmt::format("{}{} {}", missed.empty() ? "" : " and ", name, fmt::format(fmt::runtime("{:.4g}"), value));
    }
    return out;
  };
  // One after another, so that `missed` names the scores in this order (a function's
  // arguments are evaluated in no set order).
  const std::string bleu = figure("BLEU", s.bleu.score, c.min_bleu, "{} {:.2f}");
  const std::string chrf = figure("chrF", s.chrf, c.min_chrf, "{} {:.2f}");
  const std::string exact = figure("exact match", s.exact_match, c.min_exact, "{} {:.3f}");
  const std::string text = fmt::format("{}, {}, {} over {} references", bleu, chrf, exact, s.pairs);
  if (failed) *failed = missed;
  return text;
}

Status apply_task_gate(ServingVersion& candidate, const TaskGateConfig& c, GateResult* g) {
  if (!c.enabled() || !g->passed) return ok_status();  // a refused candidate needs no more figures
  LLMS_ASSIGN_OR_RETURN(const std::vector<TaskReference> refs, read_task_references(c.reference_path));
  TaskAnswerOptions opts;
  opts.max_tokens = c.max_tokens;
  LLMS_ASSIGN_OR_RETURN(g->task, score_version(candidate, refs, opts));
  g->task_ran = true;
  std::string missed;
  const std::string figures = "task scores " + describe_task_scores(g->task, c, &missed);
  if (!missed.empty()) {
    const bool several = missed.find(" and ") != std::string::npos;
    g->passed = false;
    const std::string prefix = "passed: ";
    std::string rest = g->reason.rfind(prefix, 0) == 0 ? g->reason.substr(prefix.size()) : g->reason;
    g->reason = fmt::format("refused by the quality gate: {} {} below {} minimum; {}; {}", missed,
                            several ? "are" : "is", several ? "their" : "its", figures, rest);
  } else {
    g->reason += "; " + figures;
  }
  return ok_status();
}

}  // namespace llms
