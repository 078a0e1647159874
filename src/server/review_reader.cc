#include "server/review_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <random>

namespace llms {
namespace {

std::string str(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// The prompt as one text: a completion's prompt, or a chat's "role: content" lines.
std::string prompt_text(const Json& r) {
  if (!r.contains("messages") || !r["messages"].is_array()) return str(r, "prompt");
  std::string out;
  for (const Json& m : r["messages"]) out += (out.empty() ? "" : "\n") + str(m, "role") + ": " + str(m, "content");
  return out;
}

std::string joined(const std::vector<Json>& feedback, const std::function<std::string(const Json&)>& field) {
  std::string out;
  for (const Json& f : feedback) {
    const std::string v = field(f);
    if (!v.empty()) out += (out.empty() ? "" : "; ") + v;
  }
  return out;
}

std::string ratings(const ReviewEntry& e) {
  return joined(e.feedback, [](const Json& f) { return f.contains("rating") ? f["rating"].dump() : std::string(); });
}
std::string labels(const ReviewEntry& e) {
  return joined(e.feedback, [](const Json& f) {
    std::string out;
    if (f.contains("labels") && f["labels"].is_array()) {
      for (const Json& l : f["labels"]) out += (out.empty() ? "" : ",") + (l.is_string() ? l.get<std::string>() : "");
    }
    return out;
  });
}
std::string comments(const ReviewEntry& e) {
  return joined(e.feedback, [](const Json& f) { return str(f, "comment"); });
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

bool passes(const ReviewEntry& e, const ReviewFilter& f) {
  if (!f.version.empty() && str(e.request, "version") != f.version) return false;
  if (!f.finish_reason.empty() && str(e.request, "finish_reason") != f.finish_reason) return false;
  if (f.rating) {
    return std::any_of(e.feedback.begin(), e.feedback.end(), [&](const Json& fb) {
      return fb.contains("rating") && fb["rating"].is_number_integer() && fb["rating"].get<int>() == *f.rating;
    });
  }
  return true;
}

}  // namespace

Result<std::vector<ReviewEntry>> read_review_log(const std::string& path, const ReviewFilter& filter) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read the review log {}", path));
  std::vector<ReviewEntry> entries;
  std::map<std::string, std::vector<Json>> feedback;  // by request id
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object()) return invalid_argument(fmt::format("{}:{}: not a JSON object", path, number));
    if (str(j, "type") == "feedback") {
      feedback[str(j, "id")].push_back(std::move(j));
    } else if (str(j, "type") == "request") {
      entries.push_back({std::move(j), {}});
    }
  }
  std::vector<ReviewEntry> matched;
  for (ReviewEntry& e : entries) {
    if (auto it = feedback.find(str(e.request, "id")); it != feedback.end()) e.feedback = it->second;
    if (passes(e, filter)) matched.push_back(std::move(e));
  }
  if (filter.limit == 0 || matched.size() <= filter.limit) return matched;
  std::vector<size_t> order(matched.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(filter.seed);
  std::shuffle(order.begin(), order.end(), rng);
  order.resize(filter.limit);
  std::sort(order.begin(), order.end());
  std::vector<ReviewEntry> sample;
  for (size_t i : order) sample.push_back(std::move(matched[i]));
  return sample;
}

std::string review_csv(const std::vector<ReviewEntry>& entries) {
  std::string out = "time,id,version,finish_reason,latency_s,ratings,labels,comments,prompt,answer\n";
  for (const ReviewEntry& e : entries) {
    const Json& r = e.request;
    const std::string latency = r.contains("latency_s") && r["latency_s"].is_number()
                                    ? fmt::format("{:.3f}", r["latency_s"].get<double>())
                                    : std::string();
    for (const std::string& f : {str(r, "time"), str(r, "id"), str(r, "version"), str(r, "finish_reason"), latency,
                                 ratings(e), labels(e), comments(e), prompt_text(r)}) {
      out += csv_field(f) + ",";
    }
    out += csv_field(str(r, "answer")) + "\n";
  }
  return out;
}

std::string review_text(const std::vector<ReviewEntry>& entries) {
  std::string out;
  for (const ReviewEntry& e : entries) {
    const Json& r = e.request;
    out += fmt::format("── {}  {}  version {}  finish {}\n", str(r, "time"), str(r, "id"), str(r, "version"),
                       str(r, "finish_reason"));
    out += prompt_text(r) + "\n→ " + str(r, "answer") + "\n";
    if (!e.feedback.empty()) out += fmt::format("ratings: {}  labels: {}  comments: {}\n", ratings(e), labels(e), comments(e));
    out += "\n";
  }
  return out;
}

}  // namespace llms
