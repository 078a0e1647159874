// llmserve review --log FILE [--version V] [--finish-reason R] [--rating N] [--limit N]
//                 [--seed S] [--csv OUT.csv]
//
// A sample of the review log (server/review_reader.h) for a person to read, each
// answer with the ratings its request got; --csv writes the same entries as CSV.
#include <cstdio>
#include <fstream>
#include <optional>

#include "cli/commands.h"
#include "server/review_reader.h"

namespace llms::cli {
namespace {

struct Options {
  std::string log, version, finish_reason, csv;
  int rating = 0;
  CLI::Option* rating_flag = nullptr;
  size_t limit = 20;
  uint64_t seed = 1;
};

void run(const Options& o) {
  ReviewFilter f;
  f.version = o.version;
  f.finish_reason = o.finish_reason;
  if (o.rating_flag->count() > 0) f.rating = o.rating;
  f.limit = o.limit;
  f.seed = o.seed;
  const std::vector<ReviewEntry> entries = value_or_fail(read_review_log(o.log, f));
  if (!o.csv.empty()) {
    std::ofstream out(o.csv, std::ios::binary);
    out << review_csv(entries);
    if (!out) fail(invalid_argument("cannot write " + o.csv));
    std::printf("%zu entries written to %s\n", entries.size(), o.csv.c_str());
    return;
  }
  std::fputs(review_text(entries).c_str(), stdout);
  std::printf("%zu entries\n", entries.size());
}

}  // namespace

void add_review_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("review", "Read a sample of the review log (answers with their ratings), or export CSV");
  cmd->add_option("--log", o->log, "Review log (serve --review-log)")->required();
  cmd->add_option("--version", o->version, "Only this version's answers");
  cmd->add_option("--finish-reason", o->finish_reason, "Only answers that ended so (stop, length, ...)");
  o->rating_flag = cmd->add_option("--rating", o->rating, "Only answers rated this value");
  cmd->add_option("--limit", o->limit, "At most this many (a uniform sample; 0: all)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the sample")->capture_default_str();
  cmd->add_option("--csv", o->csv, "Write the entries to this CSV file instead of printing them");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
