// A `llmserve serve` child process for the load tools (loadgen, soak): started on a
// free port (the port is read from its first line), probed for /ready, and stopped
// with SIGTERM (a clean stop is exit status 0).
//
// Thread-safety: plain functions; one ServeChild per process started.
#pragma once

#include <sys/types.h>

#include <string>

namespace llms::bench {

struct ServeChild {
  pid_t pid = -1;
  int port = 0;
  int stdout_fd = -1;  // kept open: the server prints again when it stops
};

// Runs `bin serve -m model --host host --port 0 args` through /bin/sh; pid -1 or
// port 0 when it did not start. Prints the server's first line.
ServeChild start_serve(const std::string& bin, const std::string& model, const std::string& host,
                       const std::string& args);
// Polls GET /ready until 200 or `timeout_s` passes.
bool wait_ready(const std::string& host, int port, double timeout_s = 60);
// SIGTERM, then waits; true when it exited with status 0.
bool stop_serve(ServeChild& child);
// Lifts the soft limit on open files to the hard one (many client sockets).
void raise_fd_limit();

}  // namespace llms::bench
