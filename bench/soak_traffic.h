// The soak's traffic: client threads that each run random scenarios against an
// llmserve server over plain blocking sockets — streams read to the end, whole
// completions and chats, repeats of deterministic requests (the result cache),
// prompts sharing a long prefix (the prefix cache), clients that leave mid-stream,
// requests with a tiny timeout, bad requests, streams whose client stops reading,
// headers sent too slowly, probes, and attacks (grammars past their budget, an answer
// too large to build, invented methods and paths, a foreign Host or Origin, a
// form-typed body) — checking every answer it gets.
//
// Thread-safety: Traffic's counters are atomics or under its mutex; run_client() is
// called from several threads at once.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace llms::bench {

enum class Scenario {
  kStream,
  kChatStream,
  kWhole,
  kCached,
  kSharedPrefix,
  kCancel,
  kTimeout,
  kBad,
  kStall,
  kSlowHeaders,
  kProbe,
  kAttack,
  kCount
};
const char* scenario_name(Scenario s);

struct TrafficOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  double stall_timeout_s = 2;   // the server's stream_stall_timeout: a stalled client waits past it
  double header_timeout_s = 2;  // the server's header_timeout
};

// A blocking HTTP exchange on one connection ("Connection: close").
struct Reply {
  int status = 0;        // 0: no (complete) answer
  std::string body;      // de-chunked
  std::string error;     // why there is no answer
};
Reply http_call(const TrafficOptions& o, const std::string& method, const std::string& path, const std::string& body,
                double timeout_s = 60);

class Traffic {
 public:
  explicit Traffic(TrafficOptions o) : o_(std::move(o)) {}
  // Runs scenarios until `stop` is set; `seed` varies the mix between threads.
  void run_client(const std::atomic<bool>& stop, uint64_t seed);

  int64_t total() const;
  int64_t unexpected() const { return unexpected_.load(); }
  int64_t refused() const { return refused_.load(); }
  // One line per scenario: runs, and the first unexpected answer if any.
  std::string report() const;

 private:
  // True when the answer is what the scenario expects.
  bool run(Scenario s, uint64_t r);
  bool stream(uint64_t r, bool chat);
  bool cancel(uint64_t r);
  bool stall(uint64_t r);
  bool slow_headers();
  bool attack(uint64_t r);
  bool expect(const Reply& reply, int status, const char* needle);
  void note(Scenario s, const std::string& what);

  const TrafficOptions o_;
  std::array<std::atomic<int64_t>, static_cast<size_t>(Scenario::kCount)> runs_{};
  std::atomic<int64_t> unexpected_{0};
  std::atomic<int64_t> refused_{0};  // 429 / 503 under load: reported, not failures
  mutable std::mutex mu_;
  std::array<std::string, static_cast<size_t>(Scenario::kCount)> first_error_;
};

}  // namespace llms::bench
