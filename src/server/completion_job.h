// CompletionJob: one completions or chat request in flight — its choices (prompts x n),
// each an engine request or a replay from the result cache, and the HttpExchange that
// answers it, whole or as a stream of SSE chunks.
//
// With tools, each choice's text is read back for calls (tool_calls.h): a whole
// response carries message.tool_calls; a stream sends the text before the first
// call as content deltas (holding back what may be the start of a call marker) and
// each call as delta.tool_calls fragments as it is written (tool_call_stream.h).
//
// Flow: start() submits every choice (a refusal cancels the ones already queued and
// answers the error), then the engine's notify callbacks schedule pump() on the
// connection's strand through HttpExchange::when_writable(), so a stream whose client
// reads slowly is pumped only as fast as it is read; pump() turns at most kPumpBytes of
// events into SSE chunks per run and writes them. When the client goes away (or stops
// reading for stream_stall_timeout) the exchange's on_close cancels every choice; the
// engine ends them "cancelled" and frees their KV blocks at its next step.
//
// Thread-safety: all members run on the exchange's strand (start() is called there by
// the router, the rest is posted); the only cross-thread entry is the notify callback,
// which posts.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/reasoning.h"
#include "chat/tool_call_stream.h"
#include "chat/tool_calls.h"
#include "server/http_types.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/prompt_builder.h"
#include "server/server_context.h"

namespace llms {

class CompletionJob : public std::enable_shared_from_this<CompletionJob> {
 public:
  // SSE bytes one pump() writes at most before yielding to the connection's buffer.
  static constexpr size_t kPumpBytes = 16 << 10;

  // Every choice runs on `version`, which the job keeps alive until it completes.
  CompletionJob(ServerContext& ctx, VersionPtr version, std::shared_ptr<HttpExchange> exchange,
                CompletionRequest request, std::vector<PromptInput> prompts,
                std::optional<ToolCallFormat> tools = std::nullopt);
  ~CompletionJob();
  void start();

 private:
  struct Choice {
    int index = 0;
    int prompt_index = 0;
    RequestParams params;
    std::shared_ptr<RequestHandle> handle;  // null when replayed from the result cache
    std::deque<RequestEvent> events;        // taken from the handle (or the cache), not yet written
    std::string text;
    std::vector<TokenLogprobs> logprobs;
    int64_t chars = 0;  // text length so far (legacy text_offset)
    std::optional<FinishEvent> finish;
    bool opened = false;  // first stream chunk (role / echo) sent
    size_t streamed = 0;  // tools: bytes of text already sent as content
    bool in_call = false;  // tools: a call has started at call_start
    size_t call_start = 0;
    ToolCallStreamer streamer;  // tools: delta.tool_calls from the text after call_start
    std::optional<ReasoningSplitter> thinking;  // chat with --reasoning-format deepseek
    std::string answer;         // the whole text, kept for the review log (drawn requests only)
  };

  std::optional<ApiError> validate_prompts() const;
  // Non-streamed: a 400 naming max_response_bytes when the answer's upper bound
  // (choice_bytes_bound) passes it, so that no answer is cut after its compute.
  std::optional<ApiError> check_response_bound() const;
  std::optional<ApiError> submit_all();
  RequestParams choice_params(int prompt_index, int n_index) const;
  void schedule_pump();
  void pump();
  // Writes c's events into `out` up to kPumpBytes; true when some are left.
  bool take_events(Choice& c, std::string* out);
  void on_token(Choice& c, TokenEvent& t, std::string* out);
  void on_finish(Choice& c, FinishEvent& f, std::string* out);
  // Streams: sends the reasoning part of `text` as delta.reasoning_content and leaves
  // the content part in it (`last`: the answer's end, nothing more comes).
  void stream_reasoning(Choice& c, std::string* text, bool last, std::string* out);
  void prepend_prompt_logprobs(Choice& c, const FinishEvent& f);
  void open_choice(Choice& c, std::string* out);
  // Tools, streaming: sends the content that can no longer be part of a call.
  void stream_tool_text(Choice& c, std::string* out);
  // Tools, streaming, at the end: the rest of the content, then every call.
  void finish_tool_stream(Choice& c, const FinishEvent& f, std::string* out);
  // The calls of a whole answer: parsed when it ended normally, else (cut by
  // max_tokens) as its stream would have sent them, the partial call included.
  std::vector<ToolCallResult> read_calls(const std::string& text, FinishReason reason, std::string* content);
  // Appends one SSE chunk of the stream to `out` and counts it.
  void emit(StreamChunk chunk, std::string* out);
  void complete();
  // At the end: the request may be rated (feedback), and a drawn one is written to the
  // review log.
  void record_for_review();
  void respond_whole(const std::vector<ChoiceResult>& results);
  void cancel_all();
  UsageTotals usage() const;
  // The access log's part of this request (access_log.h).
  std::string note() const;
  HttpHeaders version_headers() const;

  ServerContext& ctx_;
  const VersionPtr version_;
  std::shared_ptr<HttpExchange> exchange_;
  CompletionRequest request_;
  std::vector<PromptInput> prompts_;
  std::optional<ToolCallFormat> tools_;
  ResponseMeta meta_;
  std::vector<Choice> choices_;
  std::shared_ptr<CompletionJob> self_;  // keeps the job alive until complete()
  std::atomic<bool> pump_posted_{false};
  bool counted_ = false;
  bool done_ = false;
  bool client_gone_ = false;
  bool reviewed_ = false;   // drawn for the review log
  int64_t start_ns_ = 0;
};

}  // namespace llms
