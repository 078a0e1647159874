// Other APIs over the chat completions path: OpenAI's Responses API
// (responses_api.cc) and Anthropic's Messages API (messages_api.cc) are translated
// into a chat completions body, run by handle_completions() like any chat request,
// and its answer is translated back on the way out by a TranslatingExchange: a whole
// chat.completion becomes the other API's object, each chat.completion.chunk of a
// stream becomes that API's events, and errors take that API's error shape. So the
// engine, the templates, tools, grammars and the stream's pacing are the chat path's,
// with no second copy.
//
// Thread-safety: a TranslatingExchange is used as its inner exchange is (its strand);
// its translator holds the stream's state and is touched only from there.
#pragma once

#include <memory>
#include <string>

#include "server/http_types.h"
#include "server/json_util.h"
#include "server/server_context.h"

namespace llms {

// One API's answer shapes, from the chat path's. A stream's state (which blocks are
// open, the text so far) lives in the translator, one per request.
class AnswerTranslator {
 public:
  virtual ~AnswerTranslator() = default;
  // A whole chat.completion → this API's object.
  virtual Json whole(const Json& chat_completion) = 0;
  // A chat error (its {"error": {...}} body and HTTP status) → this API's error body.
  virtual Json error(const Json& openai_error, int status) = 0;
  // Streams: the events to send for one chat.completion.chunk, for "[DONE]", and for
  // an error event the chat path wrote in place of a chunk.
  virtual std::string chunk(const Json& chat_chunk) = 0;
  virtual std::string done() = 0;
  virtual std::string stream_error(const Json& openai_error) = 0;
};

// What the translators read of a chat.completion.chunk: its first choice's delta.
struct ChatDelta {
  std::string reasoning;        // delta.reasoning_content
  std::string content;          // delta.content
  Json tool_calls = Json::array();  // delta.tool_calls
};
// Reads `chunk` into `delta`, and its usage (when it carries one) and finish_reason
// (when set) into *usage and *finish.
void read_chat_chunk(const Json& chunk, ChatDelta* delta, Json* usage, std::string* finish);

// An SSE event with an event name, as both APIs frame them.
std::string named_sse_event(const std::string& name, const Json& data);

class TranslatingExchange : public HttpExchange {
 public:
  TranslatingExchange(std::shared_ptr<HttpExchange> inner, std::unique_ptr<AnswerTranslator> translator)
      : inner_(std::move(inner)), translator_(std::move(translator)) {}
  void respond(HttpResponse response) override;
  void begin_stream(std::string content_type, HttpHeaders headers) override {
    inner_->begin_stream(std::move(content_type), std::move(headers));
  }
  void write(std::string data) override;
  void end_stream() override { inner_->end_stream(); }
  void post(std::function<void()> fn) override { inner_->post(std::move(fn)); }
  void when_writable(std::function<void()> fn) override { inner_->when_writable(std::move(fn)); }
  void set_on_close(std::function<void()> fn) override { inner_->set_on_close(std::move(fn)); }
  void set_note(std::string note) override { inner_->set_note(std::move(note)); }

 private:
  std::shared_ptr<HttpExchange> inner_;
  std::unique_ptr<AnswerTranslator> translator_;
  std::string pending_;  // a stream's bytes up to an event's end
};

// Runs `chat_body` (a chat completions request built from another API's) as
// POST /v1/chat/completions would, answering through `translator`. `req` gives the
// headers (authorization, version pin).
void run_translated_chat(ServerContext& ctx, const HttpRequest& req, const std::shared_ptr<HttpExchange>& ex,
                         Json chat_body, std::unique_ptr<AnswerTranslator> translator);

// The prompt tokens `chat_body` would take (Anthropic's count_tokens): its messages
// and tools rendered by the served version's template (defined with the chat path,
// completion_endpoint.cc).
std::optional<ApiError> chat_prompt_tokens(ServerContext& ctx, const HttpRequest& req, const Json& chat_body,
                                           int64_t* tokens);

}  // namespace llms
