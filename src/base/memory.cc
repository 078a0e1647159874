#include "base/memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace llms {

int64_t process_rss_bytes() {
  // RssAnon: the process's own memory. VmRSS adds the mapped file pages (the model
  // file before repacking, the token embedding rows read in place), which the kernel
  // may drop at any time and which would count the weights twice while loading.
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) != 0) continue;
    std::istringstream fields(line.substr(8));
    int64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return 0;
}

int64_t machine_memory_bytes() {
  const int64_t ram = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  std::ifstream cg("/sys/fs/cgroup/memory.max");
  std::string v;
  if (cg >> v && v != "max") {
    try {
      const int64_t limit = std::stoll(v);
      if (limit > 0) return std::min(ram, limit);
    } catch (...) {
    }
  }
  return ram;
}

int64_t effective_memory_limit(int64_t configured) { return configured > 0 ? configured : machine_memory_bytes(); }

}  // namespace llms
