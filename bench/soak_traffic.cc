#include "soak_traffic.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <random>
#include <thread>

namespace llms::bench {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// The last answer this thread got, for the report of an unexpected one.
thread_local std::string t_last_answer;

const char* const kWords[] = {"cat", "dog", "sun", "tree", "boat", "happy", "little", "girl", "park", "ran",
                              "ball", "red", "mom", "big", "fish", "sky", "toy", "jump", "bird", "cake"};
// A long shared prefix: its full KV blocks are found in the prefix cache.
const char* const kPrefix =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. "
    "One day, she saw a big red ball under a tree and she ran to get it. Her mom said she could keep it if";

// One TCP connection with deadlines on every wait.
class Socket {
 public:
  Socket(const TrafficOptions& o, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(o.port));
    inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) reset();
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool send(const std::string& bytes) {
    return ok() && ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Reads until `needle` arrived (empty: until the server closes) or the deadline.
  bool read_until(const std::string& needle, double timeout_s) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    char buf[16384];
    while (ok() && Clock::now() < deadline) {
      if (!needle.empty() && got_.find(needle) != std::string::npos) return true;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return needle.empty();
      got_.append(buf, static_cast<size_t>(n));
    }
    return !needle.empty() && got_.find(needle) != std::string::npos;
  }
  const std::string& got() const { return got_; }
  // Leaves abruptly, like a client that dies.
  void reset() {
    if (fd_ < 0) return;
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::string got_;
};

std::string request_text(const TrafficOptions& o, const std::string& method, const std::string& path,
                         const std::string& body) {
  return method + " " + path + " HTTP/1.1\r\nHost: " + o.host + "\r\nConnection: close\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Status and de-chunked body of a whole response; status 0 when it is incomplete.
Reply parse_reply(const std::string& raw) {
  Reply r;
  const size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return r;
  const std::string head = raw.substr(0, end);
  std::string rest = raw.substr(end + 4);
  if (head.find("Transfer-Encoding: chunked") == std::string::npos) {
    r.body = std::move(rest);
  } else {
    size_t pos = 0;
    for (;;) {
      const size_t eol = rest.find("\r\n", pos);
      if (eol == std::string::npos) return r;
      const size_t size = std::stoul(rest.substr(pos, eol - pos), nullptr, 16);
      if (size == 0) break;
      if (rest.size() < eol + 2 + size) return r;
      r.body.append(rest, eol + 2, size);
      pos = eol + 2 + size + 2;
    }
  }
  r.status = std::stoi(raw.substr(9, 3));
  return r;
}

std::string random_prompt(uint64_t r) {
  std::string p;
  std::mt19937_64 rng(r);
  for (int i = 0; i < 3 + static_cast<int>(rng() % 8); ++i) p += std::string(i ? " " : "") + kWords[rng() % std::size(kWords)];
  return p;
}

// Weights of the mix, in the order of Scenario.
constexpr int kWeights[] = {18, 8, 12, 10, 10, 8, 5, 8, 3, 3, 5, 6};
static_assert(std::size(kWeights) == static_cast<size_t>(Scenario::kCount));

Scenario pick(uint64_t r) {
  int total = 0;
  for (int w : kWeights) total += w;
  int x = static_cast<int>(r % static_cast<uint64_t>(total));
  for (size_t i = 0; i < std::size(kWeights); ++i) {
    if ((x -= kWeights[i]) < 0) return static_cast<Scenario>(i);
  }
  return Scenario::kProbe;
}

}  // namespace

const char* scenario_name(Scenario s) {
  static const char* const kNames[] = {"stream", "chat-stream", "whole", "cached", "shared-prefix", "cancel",
                                       "timeout", "bad-request", "stalled-reader", "slow-headers", "probe",
                                       "attack"};
  return kNames[static_cast<size_t>(s)];
}

namespace {

// `text` (a whole request) on its own connection; the answer read to the close.
Reply raw_call(const TrafficOptions& o, const std::string& text, double timeout_s) {
  Socket s(o);
  if (!s.send(text)) return Reply{0, "", "connect/send failed"};
  if (!s.read_until("", timeout_s)) return Reply{0, "", "no complete answer within the deadline"};
  Reply r = parse_reply(s.got());
  if (r.status == 0) r.error = "malformed answer: " + s.got().substr(0, 200);
  t_last_answer = text.substr(0, std::min<size_t>(text.find(' '), 80)) + " -> " + std::to_string(r.status) + " " +
                  r.body.substr(0, 200) + r.error;
  return r;
}

std::string random_word(std::mt19937_64& rng, size_t n) {
  std::string w;
  for (size_t i = 0; i < n; ++i) w += static_cast<char>('A' + rng() % 26);
  return w;
}

}  // namespace

Reply http_call(const TrafficOptions& o, const std::string& method, const std::string& path, const std::string& body,
                double timeout_s) {
  Reply r = raw_call(o, request_text(o, method, path, body), timeout_s);
  t_last_answer = method + " " + path + " -> " + std::to_string(r.status) + " " + r.body.substr(0, 200) + r.error;
  return r;
}

bool Traffic::expect(const Reply& reply, int status, const char* needle) {
  if (reply.status == 429 || reply.status == 503) {
    refused_.fetch_add(1);
    return true;
  }
  return reply.status == status && (needle == nullptr || reply.body.find(needle) != std::string::npos);
}

bool Traffic::stream(uint64_t r, bool chat) {
  Json body = {{"max_tokens", 8 + static_cast<int>(r % 40)}, {"stream", true}, {"temperature", 0.8}};
  if (chat) {
    body["messages"] = {{{"role", "user"}, {"content", random_prompt(r)}}};
  } else {
    body["prompt"] = random_prompt(r);
  }
  const Reply reply = http_call(o_, "POST", chat ? "/v1/chat/completions" : "/v1/completions", body.dump());
  return expect(reply, 200, "data: [DONE]") && (reply.status != 200 || reply.body.find("\"finish_reason\":\"") != std::string::npos);
}

bool Traffic::cancel(uint64_t r) {
  Socket s(o_);
  const Json body = {{"prompt", random_prompt(r)}, {"max_tokens", 200}, {"ignore_eos", true}, {"stream", true}};
  if (!s.send(request_text(o_, "POST", "/v1/completions", body.dump()))) return false;
  t_last_answer = "cancel: no first chunk";
  const bool got_chunk = s.read_until("data: {", 60) || s.got().find(" 503 ") != std::string::npos;
  s.reset();
  return got_chunk;
}

bool Traffic::stall(uint64_t r) {
  Socket s(o_, /*receive_buffer=*/4096);
  const Json body = {{"prompt", random_prompt(r)}, {"max_tokens", 400}, {"ignore_eos", true}, {"stream", true},
                     {"logprobs", 5}};
  if (!s.send(request_text(o_, "POST", "/v1/completions", body.dump()))) return false;
  std::this_thread::sleep_for(std::chrono::duration<double>(o_.stall_timeout_s + 1));  // the stalled reader
  s.reset();
  return true;
}

bool Traffic::slow_headers() {
  Socket s(o_);
  if (!s.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n")) return false;
  s.read_until("", o_.header_timeout_s + 10);
  t_last_answer = "slow headers -> " + s.got().substr(0, 200);
  return s.got().rfind("HTTP/1.1 408", 0) == 0;
}

// The attacks the hardening work answers (tests/server_hostile_requests_test.cc,
// tests/server_hardening_test.cc), each with the answer it must get.
bool Traffic::attack(uint64_t r) {
  const std::string completion = Json{{"prompt", "x"}, {"max_tokens", 2}}.dump();
  switch (r % 7) {
    case 0: {  // nested counted repetitions: compiled, or refused naming the budget
      const Json body = {{"prompt", "x"}, {"max_tokens", 4}, {"regex", "(x{1,4096}){1,4096}"}};
      const Reply reply = http_call(o_, "POST", "/v1/completions", body.dump());
      return expect(reply, 200, nullptr) || expect(reply, 400, "grammar_");
    }
    case 1: {  // too ambiguous after about 90 tokens: a client error mid-generation
      const Json body = {{"prompt", "Once"}, {"max_tokens", 300}, {"temperature", 0}, {"ignore_eos", true},
                         {"regex", "(x{1,128}|x){1,128}"}};
      return expect(http_call(o_, "POST", "/v1/completions", body.dump()), 400, "\"grammar_budget_exceeded\"");
    }
    case 2: {  // an answer past max_response_bytes: refused before any compute
      const Json body = {{"prompt", "Once"}, {"max_tokens", 2000}, {"n", 64}, {"logprobs", 20}, {"ignore_eos", true}};
      return expect(http_call(o_, "POST", "/v1/completions", body.dump()), 400, "\"response_too_large\"");
    }
    case 3: {  // an invented method (sometimes 60 KB) and path: never a new metric series
      std::mt19937_64 rng(r);
      const std::string method = r % 10 == 3 ? random_word(rng, 60 << 10) : random_word(rng, 1 + rng() % 24);
      const std::string path = "/v1/" + random_word(rng, 1 + rng() % 300);
      const Reply reply = raw_call(o_, method + " " + path + " HTTP/1.1\r\nHost: " + o_.host +
                                           "\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 60);
      return reply.status == 400 || reply.status == 404 || reply.status == 405 || reply.status == 431;
    }
    case 4:  // a page on another site that reached the server by DNS rebinding
      return expect(raw_call(o_, "POST /v1/completions HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n"
                                 "Content-Type: application/json\r\nContent-Length: " +
                                     std::to_string(completion.size()) + "\r\n\r\n" + completion, 60),
                    403, "host_not_allowed");
    case 5:  // a cross-origin fetch
      return expect(raw_call(o_, "POST /v1/completions HTTP/1.1\r\nHost: " + o_.host +
                                     "\r\nOrigin: http://attacker.example\r\nConnection: close\r\n"
                                     "Content-Type: application/json\r\nContent-Length: " +
                                     std::to_string(completion.size()) + "\r\n\r\n" + completion, 60),
                    403, "origin_not_allowed");
    default:  // a form post, which a browser sends without a preflight
      return expect(raw_call(o_, "POST /v1/completions HTTP/1.1\r\nHost: " + o_.host +
                                     "\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: " +
                                     std::to_string(completion.size()) + "\r\n\r\n" + completion, 60),
                    415, nullptr);
  }
}

bool Traffic::run(Scenario s, uint64_t r) {
  switch (s) {
    case Scenario::kStream: return stream(r, false);
    case Scenario::kChatStream: return stream(r, true);
    case Scenario::kWhole: {
      const Json body = {{"prompt", random_prompt(r)}, {"max_tokens", 4 + static_cast<int>(r % 24)}, {"n", 1 + static_cast<int>(r % 2)}};
      return expect(http_call(o_, "POST", "/v1/completions", body.dump()), 200, "\"choices\"");
    }
    case Scenario::kCached: {  // 16 deterministic requests, repeated: answered from the result cache
      const Json body = {{"prompt", std::string(kWords[r % 16]) + " and the"}, {"max_tokens", 12}, {"temperature", 0}};
      return expect(http_call(o_, "POST", "/v1/completions", body.dump()), 200, "\"choices\"");
    }
    case Scenario::kSharedPrefix: {
      const Json body = {{"messages", {{{"role", "user"}, {"content", std::string(kPrefix) + " " + random_prompt(r)}}}},
                         {"max_tokens", 4}};
      return expect(http_call(o_, "POST", "/v1/chat/completions", body.dump()), 200, "\"cached_tokens\"");
    }
    case Scenario::kCancel: return cancel(r);
    case Scenario::kTimeout: {
      const Json body = {{"prompt", random_prompt(r)}, {"max_tokens", 400}, {"ignore_eos", true}, {"timeout", 1e-4}};
      return expect(http_call(o_, "POST", "/v1/completions", body.dump()), 200, "\"finish_reason\":\"timeout\"");
    }
    case Scenario::kBad: {
      static const char* const kBodies[] = {"{\"prompt\": ", "[1,2]", "{\"prompt\":\"x\",\"temperature\":\"hot\"}",
                                            "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}",
                                            "{\"prompt\":\"x\",\"n\":1000}"};
      const bool chat = r % 5 == 3;
      return expect(http_call(o_, "POST", chat ? "/v1/chat/completions" : "/v1/completions", kBodies[r % 5]), 400,
                    "\"invalid_request_error\"");
    }
    case Scenario::kStall: return stall(r);
    case Scenario::kSlowHeaders: return slow_headers();
    case Scenario::kProbe:
      return expect(http_call(o_, "GET", r % 2 ? "/health" : "/v1/models", ""), 200, nullptr);
    case Scenario::kAttack: return attack(r);
    case Scenario::kCount: break;
  }
  return false;
}

void Traffic::note(Scenario s, const std::string& what) {
  unexpected_.fetch_add(1);
  std::lock_guard<std::mutex> lock(mu_);
  std::string& first = first_error_[static_cast<size_t>(s)];
  if (first.empty()) first = what;
}

void Traffic::run_client(const std::atomic<bool>& stop, uint64_t seed) {
  std::mt19937_64 rng(seed);
  while (!stop.load()) {
    const uint64_t r = rng();
    const Scenario s = pick(r >> 32);
    runs_[static_cast<size_t>(s)].fetch_add(1);
    t_last_answer.clear();
    if (!run(s, r)) note(s, t_last_answer);
  }
}

int64_t Traffic::total() const {
  int64_t n = 0;
  for (const auto& c : runs_) n += c.load();
  return n;
}

std::string Traffic::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (size_t i = 0; i < runs_.size(); ++i) {
    out += "  " + std::string(scenario_name(static_cast<Scenario>(i))) + ": " + std::to_string(runs_[i].load());
    if (!first_error_[i].empty()) out += "  FIRST UNEXPECTED: " + first_error_[i];
    out += "\n";
  }
  return out;
}

}  // namespace llms::bench
