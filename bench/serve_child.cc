#include "serve_child.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace llms::bench {

ServeChild start_serve(const std::string& bin, const std::string& model, const std::string& host,
                       const std::string& args) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    const std::string cmd = "exec " + bin + " serve -m " + model + " --host " + host + " --port 0 " + args;
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  std::string line;
  char ch;
  while (read(fds[0], &ch, 1) == 1 && ch != '\n') line += ch;
  ServeChild child{pid, 0, fds[0]};
  const size_t colon = line.rfind(':');
  if (line.find("serving") != std::string::npos && colon != std::string::npos) child.port = std::stoi(line.substr(colon + 1));
  std::printf("%s\n", line.c_str());
  return child;
}

bool wait_ready(const std::string& host, int port, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    bool ready = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      const std::string req = "GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
      char resp[64] = {};
      if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()) &&
          ::recv(fd, resp, sizeof(resp) - 1, 0) > 12) {
        ready = std::string(resp).rfind("HTTP/1.1 200", 0) == 0;
      }
    }
    ::close(fd);
    if (ready) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server is still loading
  }
  return false;
}

bool stop_serve(ServeChild& child) {
  if (child.pid <= 0) return false;
  kill(child.pid, SIGTERM);
  int status = 0;
  waitpid(child.pid, &status, 0);
  if (child.stdout_fd >= 0) close(child.stdout_fd);
  child = {};
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace llms::bench
