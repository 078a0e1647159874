// llmserve_soak: hours of mixed traffic against a server with its memory watched.
//
//   llmserve_soak --serve build/release/src/cli/llmserve -m MODEL.gguf --minutes 30 [--clients 8]
//                 [--sample-every 5] [--server-args "..."]
//
// Starts the server, takes an idle baseline, runs the traffic of soak_traffic.h from
// --clients threads for --minutes, and every --sample-every seconds prints the
// server's RSS, open file descriptors, threads (from /proc) and KV blocks in use,
// connections and running requests (from /metrics). Then it stops the traffic, waits
// for the server to go idle, and checks:
//   * RSS drift after warm-up (the first sixth of the run): the median of the last
//     tenth of the samples against the median of the first tenth after warm-up,
//     below --max-rss-drift (2%);
//   * file descriptors at idle no more than at the idle baseline, threads at idle equal
//     to it, and threads never above it under load;
//   * no KV block in use at idle; every answer was what its scenario expects;
//   * the server stops with exit status 0 on SIGTERM.
// Exit status 0 only when every check passes.
#include <dirent.h>
#include <signal.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "serve_child.h"
#include "soak_traffic.h"

namespace llms::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string serve_bin, model, server_args;
  double minutes = 30;
  int clients = 8;
  double sample_every_s = 5;
  double max_rss_drift = 0.02;
  double stall_timeout_s = 2, header_timeout_s = 2;  // passed to the server
};

struct Sample {
  double t = 0;
  double rss_mib = 0;
  int fds = 0, threads = 0;
  double kv_used = 0, connections = 0, running = 0;
  int64_t requests = 0;
};

int count_fds(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

void read_status(pid_t pid, Sample* s) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      in >> kib;
      s->rss_mib = kib / 1024;
    } else if (key == "Threads:") {
      in >> s->threads;
    }
    in.ignore(1 << 20, '\n');
  }
}

// The sum of the samples of `name` whose labels include `label` (e.g. `state="used"`;
// empty: every sample), over whatever other labels they carry (an engine's metrics
// carry its `version`); NaN when there is none.
double metric(const std::string& text, const std::string& name, const std::string& label = "") {
  double sum = 0;
  bool found = false;
  size_t line = 0;
  while (line < text.size()) {
    size_t end = text.find('\n', line);
    if (end == std::string::npos) end = text.size();
    const std::string_view l(text.data() + line, end - line);
    line = end + 1;
    if (l.substr(0, name.size()) != name || l.size() <= name.size()) continue;
    const char next = l[name.size()];
    if (next != ' ' && next != '{') continue;  // another metric whose name starts the same
    const size_t space = l.rfind(' ');
    const std::string_view labels = l.substr(name.size(), space - name.size());
    if (!label.empty() && labels.find(label) == std::string_view::npos) continue;
    sum += std::stod(std::string(l.substr(space + 1)));
    found = true;
  }
  return found ? sum : std::nan("");
}

Sample sample(const TrafficOptions& t, pid_t pid, double since_start, int64_t requests) {
  Sample s;
  s.t = since_start;
  s.requests = requests;
  s.fds = count_fds(pid);
  read_status(pid, &s);
  const std::string m = http_call(t, "GET", "/metrics", "", 30).body;
  s.kv_used = metric(m, "llmserve_kv_blocks", "state=\"used\"");
  s.connections = metric(m, "llmserve_http_open_connections");
  s.running = metric(m, "llmserve_requests_running");
  return s;
}

void print(const Sample& s) {
  std::printf("t=%6.0fs  rss=%8.2f MiB  fds=%4d  threads=%3d  kv_used=%5.0f  conns=%4.0f  running=%3.0f  requests=%lld\n",
              s.t, s.rss_mib, s.fds, s.threads, s.kv_used, s.connections, s.running, static_cast<long long>(s.requests));
  std::fflush(stdout);
}

double median_rss(std::vector<Sample>::const_iterator b, std::vector<Sample>::const_iterator e) {
  std::vector<double> v;
  for (auto it = b; it != e; ++it) v.push_back(it->rss_mib);
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Polls until the server is idle: nothing running or in KV, fds back at `fds`.
Sample wait_idle(const TrafficOptions& t, pid_t pid, double since, int fds, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  Sample s;
  do {
    s = sample(t, pid, since, 0);
    if (s.running == 0 && s.kv_used == 0 && s.fds <= fds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling interval
  } while (Clock::now() < deadline);
  return s;
}

bool check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  return ok;
}

// The checks of the header comment; prints one line each.
bool verdict(const Options& o, const Sample& base, const std::vector<Sample>& samples, const Sample& end,
             const Traffic& traffic, ServeChild& child) {
  bool ok = true;
  const double duration = o.minutes * 60;
  const auto warm = std::find_if(samples.begin(), samples.end(), [&](const Sample& s) { return s.t >= duration / 6; });
  const auto window = std::max<std::ptrdiff_t>(3, (samples.end() - warm) / 10);
  if (samples.end() - warm >= 2 * window) {
    const double first = median_rss(warm, warm + window), last = median_rss(samples.end() - window, samples.end());
    const double drift = (last - first) / first;
    char line[200];
    std::snprintf(line, sizeof(line), "RSS drift after warm-up %+.2f%% (median %.2f -> %.2f MiB; limit %.1f%%)",
                  drift * 100, first, last, o.max_rss_drift * 100);
    ok &= check(drift < o.max_rss_drift, line);
  } else {
    ok &= check(false, "too few samples for the RSS drift (run longer or sample more often)");
  }
  int max_threads = 0;
  for (const auto& s : samples) max_threads = std::max(max_threads, s.threads);
  ok &= check(end.fds <= base.fds, "open fds at idle " + std::to_string(end.fds) + " vs baseline " + std::to_string(base.fds));
  ok &= check(end.threads == base.threads && max_threads == base.threads,
              "threads at idle " + std::to_string(end.threads) + ", at most " + std::to_string(max_threads) +
                  " under load, baseline " + std::to_string(base.threads));
  ok &= check(end.kv_used == 0 && end.running == 0, "KV blocks used at idle " + std::to_string(static_cast<int>(end.kv_used)));
  ok &= check(traffic.unexpected() == 0, std::to_string(traffic.unexpected()) + " unexpected answers");
  ok &= check(stop_serve(child), "the server stopped with exit status 0 on SIGTERM");
  return ok;
}

// The idle baseline: the fewest fds of a few samples (a probe's socket may linger).
Sample idle_baseline(const TrafficOptions& t, pid_t pid) {
  Sample base = wait_idle(t, pid, 0, 1 << 30, 5);
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // spacing of the baseline samples
    const Sample s = sample(t, pid, 0, 0);
    if (s.fds < base.fds) base = s;
  }
  return base;
}

int run(const Options& o) {
  raise_fd_limit();
  const std::string args = o.server_args + " --stream-stall-timeout " + std::to_string(o.stall_timeout_s) +
                           " --header-timeout " + std::to_string(o.header_timeout_s);
  ServeChild child = start_serve(o.serve_bin, o.model, "127.0.0.1", args);
  if (child.pid < 0 || child.port == 0 || !wait_ready("127.0.0.1", child.port)) {
    std::fprintf(stderr, "error: the server did not start\n");
    return 1;
  }
  const TrafficOptions t{"127.0.0.1", child.port, o.stall_timeout_s, o.header_timeout_s};
  const Sample base = idle_baseline(t, child.pid);
  std::printf("idle baseline: ");
  print(base);

  Traffic traffic(t);
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < o.clients; ++i) clients.emplace_back([&, i] { traffic.run_client(stop, 1000 + i); });
  const auto t0 = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::vector<Sample> samples;
  const double duration = o.minutes * 60;
  while (since() < duration) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(o.sample_every_s, duration - since() + 0.01)));
    samples.push_back(sample(t, child.pid, since(), traffic.total()));
    print(samples.back());
  }
  stop.store(true);
  for (auto& c : clients) c.join();
  const Sample end = wait_idle(t, child.pid, since(), base.fds, 60);
  std::printf("idle at the end: ");
  print(end);
  std::printf("requests: %lld (%.1f/s), refused under load (429/503): %lld, unexpected: %lld\n%s",
              static_cast<long long>(traffic.total()), static_cast<double>(traffic.total()) / duration,
              static_cast<long long>(traffic.refused()), static_cast<long long>(traffic.unexpected()),
              traffic.report().c_str());
  const bool ok = verdict(o, base, samples, end, traffic, child);
  std::printf("%s\n", ok ? "SOAK PASSED" : "SOAK FAILED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace llms::bench

int main(int argc, char** argv) {
  llms::bench::Options o;
  CLI::App app{"Mixed traffic for a long time against llmserve, with its memory, fds and threads watched"};
  app.add_option("--serve", o.serve_bin, "The llmserve binary to start")->required();
  app.add_option("-m,--model", o.model, "Model to serve")->required();
  app.add_option("--minutes", o.minutes, "How long the traffic runs")->capture_default_str();
  app.add_option("--clients", o.clients, "Client threads")->capture_default_str();
  app.add_option("--sample-every", o.sample_every_s, "Seconds between samples")->capture_default_str();
  app.add_option("--max-rss-drift", o.max_rss_drift, "Largest RSS drift after warm-up (0.02 = 2%)")->capture_default_str();
  app.add_option("--server-args", o.server_args, "Extra serve flags");
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  return llms::bench::run(o);
}
