// llmserve inspect FILE.gguf|DIR [--json] [--load]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "io/gguf_file.h"
#include "io/hf_model.h"
#include "model/model.h"
#include "tools/describe.h"

namespace llms::cli {
namespace {

// A field of /proc/self/status in MiB ("VmRSS", "RssAnon", "VmHWM"), -1 if absent.
double status_mib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(field.size() + 1));
    double kib = 0;
    if (fields >> kib) return kib / 1024;
  }
  return -1;
}

// Loads the model as serving does and says how long that took and what it holds.
void report_load(const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model = value_or_fail(Model::load(path));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage use{};
  getrusage(RUSAGE_SELF, &use);
  const double cpu = static_cast<double>(use.ru_utime.tv_sec + use.ru_stime.tv_sec) +
                     static_cast<double>(use.ru_utime.tv_usec + use.ru_stime.tv_usec) * 1e-6;
  std::printf("load: %.3f s (process CPU time %.3f s); process memory %.1f MiB resident (%.1f anonymous, %.1f of "
              "files), peak %.1f MiB\n", s, cpu,
              status_mib("VmRSS"), status_mib("RssAnon"), status_mib("RssFile"), status_mib("VmHWM"));
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  struct Options {
    std::string path;
    bool json = false;
    bool load = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a model's architecture, tokenizer and tensors");
  cmd->add_option("file", opts->path, "GGUF file or Hugging Face model directory")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->add_flag("--load", opts->load, "Only load the model as serve does: print the time and the process's memory");
  cmd->callback([opts] {
    if (opts->load) return report_load(opts->path);
    GgufFile file = value_or_fail(open_model_file(opts->path));
    const auto d = describe_model_file(file);
    const std::string out = opts->json ? d.dump(2) + "\n" : format_model_description(d);
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
}

}  // namespace llms::cli
