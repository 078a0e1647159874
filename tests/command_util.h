// Runs a shell command and captures its output and exit status, for the end-to-end
// tests that drive the llmserve binary.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace llms::test {

struct CmdResult {
  int exit_code = -1;
  std::string out;  // stdout (and stderr when the command merges it)
};

inline CmdResult run_command(const std::string& cmd) {
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace llms::test
