#include "server/completion_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/clock.h"
#include "server/access_log.h"
#include "server/api_error.h"
#include "server/endpoints.h"
#include "server/sse.h"

namespace llms {
namespace {

// The client's error for a request the engine ended without an answer.
ApiError finish_error(const FinishEvent& f) {
  if (f.reason == FinishReason::kRejected) return slo_unattainable_error(f.message, f.retry_after_s);
  if (f.retry_after_s > 0) return unavailable_error("generation failed: " + f.message, f.retry_after_s);
  if (!f.client_error_code.empty()) return bad_request("generation stopped: " + f.message, "", f.client_error_code);
  return internal_api_error("generation failed: " + f.message);
}

}  // namespace

CompletionJob::CompletionJob(ServerContext& ctx, VersionPtr version, std::shared_ptr<HttpExchange> exchange,
                             CompletionRequest request, std::vector<PromptInput> prompts,
                             std::optional<ToolCallFormat> tools)
    : ctx_(ctx),
      version_(std::move(version)),
      exchange_(std::move(exchange)),
      request_(std::move(request)),
      prompts_(std::move(prompts)),
      tools_(tools) {
  meta_.kind = request_.kind;
  meta_.id = ctx_.next_id(request_.kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-");
  meta_.created = unix_seconds();
  meta_.model = request_.model.empty() ? ctx_.model_name : request_.model;  // an adapter's name, as asked
  meta_.fingerprint = version_->name();
  start_ns_ = now_ns();
}

HttpHeaders CompletionJob::version_headers() const { return {{kVersionHeader, version_->name()}}; }

CompletionJob::~CompletionJob() {
  cancel_all();
  if (counted_) ctx_.request_finished();
}

std::optional<ApiError> CompletionJob::validate_prompts() const {
  const int64_t total = static_cast<int64_t>(prompts_.size()) * request_.n;
  if (total > kMaxChoices) {
    return bad_request(fmt::format("{} prompts x n={} is {} completions; at most {} per request", prompts_.size(),
                                   request_.n, total, kMaxChoices),
                       "n");
  }
  const Engine& engine = version_->engine();
  for (const auto& p : prompts_) {
    // The engine's rule for a prompt; a chat's prompt is its messages.
    if (auto e = check_prompt(p.tokens, engine.vocab_size(), engine.context_length())) {
      return bad_request(e->message, request_.kind == ApiKind::kChat ? "messages" : e->param,
                         e->context_exceeded ? "context_length_exceeded" : "");
    }
  }
  return check_response_bound();  // the prompts fit: choice_params() may run
}

std::optional<ApiError> CompletionJob::check_response_bound() const {
  if (request_.stream) return std::nullopt;  // paced by the client's reading
  const int64_t limit = ctx_.config.server.max_response_bytes;
  const size_t longest = version_->tokenizer().max_piece_bytes();
  int64_t bound = 0;
  for (int pi = 0; pi < static_cast<int>(prompts_.size()); ++pi) {
    const size_t echo = request_.echo ? prompts_[static_cast<size_t>(pi)].text.size() : 0;
    const int64_t max_tokens = choice_params(pi, 0).max_tokens;
    bound += request_.n * choice_bytes_bound(max_tokens, request_.logprobs ? request_.top_logprobs : -1, longest, echo);
  }
  if (bound <= limit) return std::nullopt;
  return bad_request(fmt::format("this answer could take up to {} bytes (n={}, max_tokens, logprobs={}), more than "
                                 "the server's max_response_bytes ({}); lower n, max_tokens or logprobs, or set "
                                 "\"stream\": true",
                                 bound, request_.n, request_.logprobs ? request_.top_logprobs : 0, limit),
                     "max_tokens", "response_too_large");
}

RequestParams CompletionJob::choice_params(int prompt_index, int n_index) const {
  RequestParams p = request_.params;
  p.prompt = prompts_[static_cast<size_t>(prompt_index)].tokens;
  const int64_t room = version_->engine().context_length() - static_cast<int64_t>(p.prompt.size());
  const int64_t wanted = request_.max_tokens ? *request_.max_tokens : (request_.kind == ApiKind::kChat ? room : 16);
  p.max_tokens = static_cast<int>(std::clamp<int64_t>(wanted, p.prompt_logprobs ? 0 : 1, room));
  // n samples of one seeded request must differ, and still be reproducible.
  if (p.sampling.seed && n_index > 0) p.sampling.seed = *p.sampling.seed + static_cast<uint64_t>(n_index);
  return p;
}

std::optional<ApiError> CompletionJob::submit_all() {
  for (int pi = 0; pi < static_cast<int>(prompts_.size()); ++pi) {
    for (int ni = 0; ni < request_.n; ++ni) {
      Choice c;
      c.index = pi * request_.n + ni;
      c.prompt_index = pi;
      c.params = choice_params(pi, ni);
      if (request_.kind == ApiKind::kChat && ctx_.config.server.reasoning_format == "deepseek") {
        c.thinking.emplace(ReasoningSplitter::prompt_opens_thinking(prompts_[static_cast<size_t>(pi)].text));
      }
      if (request_.echo) {
        c.text = prompts_[static_cast<size_t>(pi)].text;
        c.chars = static_cast<int64_t>(c.text.size());
      }
      // The target knows whose result cache may answer this route.
      const Route route{request_.precision};
      if (c.params.sampling.deterministic()) {
        if (auto hit = version_->target().cached(c.params, route)) {
          for (auto& t : hit->tokens) c.events.emplace_back(std::move(t));
          c.events.emplace_back(std::move(hit->finish));
          choices_.push_back(std::move(c));
          continue;
        }
      }
      double retry = 0;
      auto handle = version_->target().submit(c.params, route, &retry);
      if (!handle.ok()) {
        cancel_all();
        return api_error_from_status(handle.status(), version_->target().snapshot().admission.draining, retry);
      }
      c.handle = std::move(handle).value();
      choices_.push_back(std::move(c));
    }
  }
  return std::nullopt;
}

void CompletionJob::start() {
  ctx_.request_started();
  counted_ = true;
  std::optional<ApiError> err = validate_prompts();
  if (!err) err = submit_all();
  if (err) {
    HttpResponse r = api_error_response(*err);
    for (auto& h : version_headers()) r.headers.push_back(std::move(h));
    exchange_->set_note(access_note(meta_.id, 0, 0, -1, ""));
    exchange_->respond(std::move(r));
    return;  // the destructor cancels what was queued and uncounts the request
  }
  self_ = shared_from_this();
  reviewed_ = request_.review && ctx_.review && ctx_.review->draw(version_->name());
  if (request_.stream) exchange_->begin_stream("text/event-stream", version_headers());
  std::weak_ptr<CompletionJob> weak = self_;
  exchange_->set_on_close([weak] {
    if (auto s = weak.lock(); s && !s->done_) {
      s->client_gone_ = true;
      s->ctx_.metrics.client_disconnects.inc();
      s->cancel_all();
    }
  });
  for (auto& c : choices_) {
    if (c.handle) {
      c.handle->set_notify([weak] {
        if (auto s = weak.lock()) s->schedule_pump();
      });
    }
  }
  schedule_pump();  // events pushed before the notify was set, and cache replays
}

void CompletionJob::schedule_pump() {
  if (pump_posted_.exchange(true)) return;
  exchange_->when_writable([s = shared_from_this()] { s->pump(); });
}

void CompletionJob::pump() {
  pump_posted_.store(false);
  if (done_) return;
  std::string out;
  bool more = false;
  for (auto& c : choices_) more |= take_events(c, &out);
  if (request_.stream && !out.empty() && !client_gone_) exchange_->write(std::move(out));
  if (std::all_of(choices_.begin(), choices_.end(), [](const Choice& c) { return c.finish.has_value(); })) {
    complete();
  } else if (more) {
    schedule_pump();  // the rest once the client has read this
  }
}

bool CompletionJob::take_events(Choice& c, std::string* out) {
  if (c.finish) return false;
  if (c.handle) {
    for (auto& ev : c.handle->drain()) c.events.push_back(std::move(ev));
  }
  if (request_.stream && !c.opened) open_choice(c, out);
  while (!c.events.empty() && !c.finish) {
    if (request_.stream && out->size() >= kPumpBytes) return true;
    RequestEvent ev = std::move(c.events.front());
    c.events.pop_front();
    if (auto* t = std::get_if<TokenEvent>(&ev)) {
      on_token(c, *t, out);
    } else {
      on_finish(c, std::get<FinishEvent>(ev), out);
    }
  }
  return false;
}

void CompletionJob::open_choice(Choice& c, std::string* out) {
  c.opened = true;
  const bool chat = request_.kind == ApiKind::kChat;
  if (!chat && !request_.echo) return;
  StreamChunk chunk{.index = c.index, .text = chat ? std::string_view() : std::string_view(c.text)};
  chunk.role = chat;
  emit(chunk, out);
  if (!chat) c.text.clear();
}

void CompletionJob::on_token(Choice& c, TokenEvent& t, std::string* out) {
  if (reviewed_) c.answer += t.text;
  TokenLogprobs lp{t.token, t.logprob, std::move(t.top), c.chars};
  c.chars += static_cast<int64_t>(t.text.size());
  if (!request_.stream) {
    c.text += t.text;
    if (request_.logprobs) c.logprobs.push_back(std::move(lp));
    return;
  }
  stream_reasoning(c, &t.text, false, out);
  if (tools_) {
    c.text += t.text;
    stream_tool_text(c, out);
    return;
  }
  if (t.text.empty() && !request_.logprobs) return;
  StreamChunk chunk{.index = c.index, .text = t.text};
  if (request_.logprobs) chunk.logprobs = logprobs_json(request_.kind, version_->tokenizer(), {lp});
  emit(chunk, out);
}

void CompletionJob::stream_reasoning(Choice& c, std::string* text, bool last, std::string* out) {
  if (!c.thinking) return;
  ReasoningSplitter::Split s = c.thinking->push(*text);
  if (last) {
    ReasoningSplitter::Split rest = c.thinking->finish();
    s.reasoning += rest.reasoning;
    s.content += rest.content;
  }
  if (!s.reasoning.empty()) emit(StreamChunk{.index = c.index, .reasoning = s.reasoning}, out);
  *text = std::move(s.content);
}

void CompletionJob::emit(StreamChunk chunk, std::string* out) {
  chunk.usage_null = request_.include_usage;
  *out += sse_event(stream_chunk(meta_, chunk));
  ctx_.metrics.streamed_chunks.inc();
}

void CompletionJob::stream_tool_text(Choice& c, std::string* out) {
  if (!c.in_call) {
    size_t end = c.text.size() - tool_call_hold_back(*tools_, c.text);
    if (const size_t start = tool_call_start(*tools_, c.text); start != std::string::npos) {
      c.in_call = true;
      c.call_start = end = start;
    }
    if (end > c.streamed) {
      emit(StreamChunk{.index = c.index, .text = std::string_view(c.text).substr(c.streamed, end - c.streamed)}, out);
      c.streamed = end;
    }
    if (!c.in_call) return;
  }
  // One chunk per call the new text touches: its head, then its arguments so far.
  Json calls = Json::array();
  for (ToolCallDelta& d : c.streamer.feed(std::string_view(c.text).substr(c.call_start))) {
    if (d.head) {
      calls.push_back({{"index", d.index}, {"id", ctx_.next_id("call_")}, {"type", "function"},
                       {"function", {{"name", std::move(d.name)}, {"arguments", ""}}}});
    } else if (!calls.empty() && calls.back()["index"] == d.index) {
      calls.back()["function"]["arguments"] = calls.back()["function"]["arguments"].get<std::string>() + d.arguments;
    } else {
      calls.push_back({{"index", d.index}, {"function", {{"arguments", std::move(d.arguments)}}}});
    }
  }
  for (Json& call : calls) emit(StreamChunk{.index = c.index, .tool_calls = Json::array({std::move(call)})}, out);
}

std::vector<ToolCallResult> CompletionJob::read_calls(const std::string& text, FinishReason reason,
                                                      std::string* content) {
  // A cut answer as its stream reported it: the partial call is a call there too.
  ParsedOutput parsed = reason == FinishReason::kStop ? parse_tool_calls(*tools_, text) : parse_cut_tool_calls(*tools_, text);
  *content = std::move(parsed.content);
  std::vector<ToolCallResult> calls;
  for (auto& p : parsed.calls) calls.push_back(ToolCallResult{ctx_.next_id("call_"), std::move(p.name), std::move(p.arguments)});
  return calls;
}

void CompletionJob::finish_tool_stream(Choice& c, const FinishEvent& f, std::string* out) {
  c.text += f.text;
  stream_tool_text(c, out);
  const bool calls = c.streamer.num_calls() > 0;
  // No call after all (a marker and then nothing, cut by max_tokens): the rest is text.
  if (!calls && c.text.size() > c.streamed) {
    emit(StreamChunk{.index = c.index, .text = std::string_view(c.text).substr(c.streamed)}, out);
  }
  StreamChunk last{.index = c.index};
  last.finish = calls && f.reason == FinishReason::kStop ? kToolCallsFinish : api_finish_reason(f.reason);
  emit(last, out);
}

void CompletionJob::on_finish(Choice& c, FinishEvent& f, std::string* out) {
  const bool failed = f.reason == FinishReason::kError || f.reason == FinishReason::kRejected;
  if (reviewed_) c.answer += f.text;
  if (request_.stream && !failed) stream_reasoning(c, &f.text, true, out);
  if (tools_ && request_.stream && !failed) {
    finish_tool_stream(c, f, out);
    c.finish = std::move(f);
    return;
  }
  if (request_.logprobs && c.params.prompt_logprobs) prepend_prompt_logprobs(c, f);
  if (!f.text.empty()) {
    c.chars += static_cast<int64_t>(f.text.size());
    if (!request_.stream) {
      c.text += f.text;
    } else {
      emit(StreamChunk{.index = c.index, .text = f.text}, out);
    }
  }
  if (request_.stream) {
    if (failed) {
      *out += "data: " + api_error_json(finish_error(f)) + "\n\n";
      ctx_.metrics.streamed_chunks.inc();
    } else {
      StreamChunk chunk{.index = c.index};
      chunk.finish = api_finish_reason(f.reason);
      emit(chunk, out);
    }
  }
  c.finish = std::move(f);
}

// Echo with logprobs: the prompt's tokens come first, the first with no logprob (nothing
// precedes it); their text offsets count the pieces of the tokens before them, less the
// leading space that decoding drops (SentencePiece's rule).
void CompletionJob::prepend_prompt_logprobs(Choice& c, const FinishEvent& f) {
  const std::vector<int32_t>& prompt = c.params.prompt;
  const Tokenizer& tok = version_->tokenizer();
  std::vector<TokenLogprobs> entries;
  entries.reserve(prompt.size() + c.logprobs.size());
  int64_t pieces = 0;
  for (int32_t t : prompt) pieces += static_cast<int64_t>(tok.token_to_piece(t).size());
  const int64_t dropped = std::max<int64_t>(0, pieces - static_cast<int64_t>(tok.decode(prompt).size()));
  int64_t offset = 0;
  for (size_t k = 0; k < prompt.size(); ++k) {
    TokenLogprobs e{prompt[k], 0.0f, {}, std::max<int64_t>(0, offset - dropped)};
    if (k == 0) {
      e.scored = false;
    } else if (k - 1 < f.prompt_logprobs.size()) {
      e.logprob = f.prompt_logprobs[k - 1].logprob;
      e.top = f.prompt_logprobs[k - 1].top;
    }
    offset += static_cast<int64_t>(tok.token_to_piece(prompt[k]).size());
    entries.push_back(std::move(e));
  }
  for (auto& e : c.logprobs) entries.push_back(std::move(e));
  c.logprobs = std::move(entries);
}

UsageTotals CompletionJob::usage() const {
  UsageTotals u;
  std::map<int, std::pair<int64_t, int64_t>> per_prompt;  // prompt index → (prompt tokens, cached)
  for (const auto& c : choices_) {
    if (!c.finish) continue;
    u.completion_tokens += c.finish->completion_tokens;
    auto& [prompt, cached] = per_prompt[c.prompt_index];
    prompt = std::max(prompt, c.finish->prompt_tokens);
    cached = std::max(cached, c.finish->cached_prompt_tokens);
  }
  for (const auto& [i, pc] : per_prompt) {
    u.prompt_tokens += pc.first;
    u.cached_tokens += pc.second;
  }
  return u;
}

void CompletionJob::record_for_review() {
  ctx_.feedback.remember(meta_.id, version_->name());
  if (!reviewed_) return;
  const double latency_s = static_cast<double>(now_ns() - start_ns_) * 1e-9;
  for (const Choice& c : choices_) {
    ReviewRecord r;
    r.id = meta_.id;
    r.version = version_->name();
    r.model = meta_.model;
    r.chat = request_.kind == ApiKind::kChat;
    if (r.chat) {
      r.messages = request_.messages;
    } else {
      r.prompt = prompts_[static_cast<size_t>(c.prompt_index)].text;
    }
    r.answer = c.answer;
    r.finish_reason = finish_reason_name(c.finish->reason);
    r.latency_s = latency_s;
    r.choice = c.index;
    ctx_.review->write(r);
  }
}

void CompletionJob::complete() {
  done_ = true;
  for (auto& c : choices_) {
    if (c.handle) c.handle->set_notify(nullptr);
  }
  record_for_review();
  exchange_->set_note(note());
  if (!client_gone_ && request_.stream) {
    std::string out;
    if (request_.include_usage) out += sse_event(usage_chunk(meta_, usage()));
    out += sse_done();
    exchange_->write(std::move(out));
    exchange_->end_stream();
  } else if (!client_gone_) {
    std::vector<ChoiceResult> results;
    for (auto& c : choices_) {
      if (c.finish->reason == FinishReason::kError || c.finish->reason == FinishReason::kRejected) {
        exchange_->respond(api_error_response(finish_error(*c.finish)));
        results.clear();
        break;
      }
      ChoiceResult r{c.index, std::move(c.text), request_.logprobs, std::move(c.logprobs), c.finish->reason, {}};
      if (c.thinking) {
        ReasoningSplitter::Split a = c.thinking->push(r.text), b = c.thinking->finish();
        r.reasoning = a.reasoning + b.reasoning;
        r.text = a.content + b.content;
      }
      if (tools_) {
        std::string content;
        r.tool_calls = read_calls(r.text, c.finish->reason, &content);
        r.text = std::move(content);
      }
      results.push_back(std::move(r));
    }
    if (!results.empty()) respond_whole(results);
  }
  ctx_.request_finished();
  counted_ = false;
  self_.reset();  // may release this job; nothing runs after it
}

void CompletionJob::respond_whole(const std::vector<ChoiceResult>& results) {
  std::string body = dump_json(whole_response(meta_, version_->tokenizer(), results, usage()));
  const int64_t limit = ctx_.config.server.max_response_bytes;
  if (static_cast<int64_t>(body.size()) > limit) {  // check_response_bound() is an upper bound: never expected
    exchange_->respond(api_error_response(internal_api_error(
        fmt::format("the answer took {} bytes, more than max_response_bytes ({})", body.size(), limit))));
    return;
  }
  exchange_->respond(HttpResponse{200, "application/json", std::move(body), version_headers()});
}

std::string CompletionJob::note() const {
  const UsageTotals u = usage();
  double ttft = -1;
  std::string reasons;
  for (const auto& c : choices_) {
    if (!c.finish) continue;
    if (c.finish->completion_tokens > 0 && (ttft < 0 || c.finish->timings.ttft_s < ttft)) ttft = c.finish->timings.ttft_s;
    if (!reasons.empty()) reasons += ',';
    reasons += finish_reason_name(c.finish->reason);
  }
  return access_note(meta_.id, u.prompt_tokens, u.completion_tokens, ttft, reasons);
}

void CompletionJob::cancel_all() {
  for (auto& c : choices_) {
    if (c.handle && !c.finish) c.handle->cancel();
  }
}

}  // namespace llms
