#include "benchserve/bench_serve.h"

#include <fmt/format.h>

#include <ctime>
#include <fstream>

#include "benchserve/bench_report.h"
#include "benchserve/bench_run.h"
#include "benchserve/dataset.h"
#include "benchserve/openai_client.h"
#include "benchserve/sweep_plot.h"

namespace llms::benchserve {

namespace {

std::string now_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

Status write_file(const std::string& path, const std::string& text, std::vector<std::string>& written) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return not_found(fmt::format("cannot write {}", path));
  f << text;
  if (!f.good()) return data_loss(fmt::format("writing {} failed", path));
  written.push_back(path);
  return ok_status();
}

Status warm_up(const BenchOptions& o, const std::string& model) {
  if (o.warmup == 0) return ok_status();
  // Not the measured prompts, which a result cache would then answer.
  LLMS_ASSIGN_OR_RETURN(const auto prompts, make_prompts(o, o.warmup, o.seed ^ 0x5741524d55505eedULL));
  const RunOutput run = run_benchmark(o, model, kInfiniteRate, prompts, terminal_progress("warm-up"));
  for (const auto& r : run.outcomes) {
    if (r.ok) return ok_status();
  }
  return unavailable(fmt::format("warm-up: all {} requests failed; the first: {}", o.warmup, run.outcomes[0].error));
}

Status save(const BenchServeOutput& out, const BenchOptions& o, const RunContext& ctx,
            std::vector<std::string>& written) {
  const bool sweep = !o.sweep_rates.empty();
  if (!o.save_result.empty()) {
    const auto j = sweep ? sweep_json(out.runs, o, ctx) : result_json(out.runs[0], o, ctx);
    LLMS_RETURN_IF_ERROR(write_file(o.save_result, j.dump(2) + "\n", written));
    LLMS_RETURN_IF_ERROR(write_file(sibling_path(o.save_result, ".md"), markdown_summary(out.runs, o, ctx), written));
  }
  if (sweep) {
    const std::string svg = !o.plot.empty() ? o.plot : o.save_result.empty() ? "" : sibling_path(o.save_result, ".svg");
    if (!svg.empty()) {
      const std::string title = fmt::format("{} on {}: {} prompts per rate, burstiness {:g}", ctx.model, o.base_url,
                                            o.num_prompts, o.burstiness);
      LLMS_RETURN_IF_ERROR(write_file(svg, sweep_svg(out.runs, title), written));
    }
  }
  return ok_status();
}

}  // namespace

std::string sibling_path(const std::string& json_path, const std::string& ext) {
  const std::string suffix = ".json";
  if (json_path.size() > suffix.size() && json_path.compare(json_path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return json_path.substr(0, json_path.size() - suffix.size()) + ext;
  }
  return json_path + ext;
}

Result<BenchServeOutput> bench_serve(const BenchOptions& o, std::FILE* out) {
  LLMS_RETURN_IF_ERROR(validate_options(o));
  const std::vector<double> rates = o.sweep_rates.empty() ? std::vector<double>{o.request_rate} : o.sweep_rates;
  // Each rate gets its own prompts: repeated deterministic prompts would be answered by
  // a server's result cache (llmserve has one) instead of its engine. Made before the
  // server is asked anything, so that a bad dataset is reported as such.
  LLMS_ASSIGN_OR_RETURN(const auto all_prompts,
                        make_prompts(o, o.num_prompts * static_cast<int>(rates.size()), o.seed));
  BenchServeOutput result;
  result.model = o.model;
  if (result.model.empty()) {
    OpenAiClient client(o.base_url, o.api_key, 30);
    LLMS_ASSIGN_OR_RETURN(result.model, client.first_model());
  }
  LLMS_RETURN_IF_ERROR(warm_up(o, result.model));
  for (size_t i = 0; i < rates.size(); ++i) {
    const double rate = rates[i];
    const auto first = all_prompts.begin() + static_cast<std::ptrdiff_t>(i) * o.num_prompts;
    const std::vector<BenchPrompt> prompts(first, first + o.num_prompts);
    const RunOutput run = run_benchmark(o, result.model, rate, prompts, terminal_progress(rate_label(rate) + " req/s"));
    result.runs.push_back(compute_result(run, o));
    if (out) {
      std::fputs(result_text(result.runs.back(), o).c_str(), out);
      std::fflush(out);
    }
  }
  const RunContext ctx{result.model, now_stamp()};
  LLMS_RETURN_IF_ERROR(save(result, o, ctx, result.files_written));
  for (const auto& r : result.runs) {
    if (r.completed == 0) {
      return unavailable(fmt::format("no request completed at {} req/s; the first error: {}", rate_label(r.request_rate),
                                     r.errors.empty() ? "none" : r.errors[0].first));
    }
  }
  return result;
}

}  // namespace llms::benchserve
