#include "benchserve/dataset.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace llms::benchserve {

namespace {

using Json = nlohmann::json;

// Plain words most tokenizers hold whole, so that a word is near one token.
constexpr const char* kWords[] = {
    "the",   "a",     "time",  "day",   "little", "girl",  "boy",   "dog",   "cat",   "tree",  "house", "sun",
    "moon",  "water", "happy", "sad",   "big",    "small", "red",   "blue",  "green", "went",  "saw",   "found",
    "said",  "ran",   "jumped", "played", "liked", "wanted", "was",  "had",   "and",   "but",   "then",  "so",
    "with",  "in",    "on",    "to",    "of",     "for",   "from",  "park",  "ball",  "bird",  "fish",  "friend",
    "mom",   "dad",   "toy",   "car",   "box",    "book",  "door",  "road",  "hill",  "sky",   "rain",  "snow",
    "apple", "cake",  "milk",  "bread", "garden", "flower", "river", "boat", "star",  "light", "night", "morning",
    "walk",  "look",  "help",  "share", "smile",  "laugh", "sing",  "dance", "sleep", "dream", "open",  "close",
    "warm",  "cold",  "soft",  "loud",  "quiet",  "fast",  "slow",  "kind",  "brave", "funny", "shiny", "new",
};
constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

// A verse-like text of our own, one line per entry, for the sonnet dataset.
constexpr const char* kVerse[] = {
    "When morning light comes softly through the pane",
    "The quiet kettle hums a patient tune",
    "And every street remembers last night's rain",
    "While gulls keep counting boats beneath the moon",
    "I walk the harbour wall with empty hands",
    "And count the ropes the fishermen have tied",
    "The tide writes slow addresses in the sands",
    "That no one reads before the turning tide",
    "A lantern sways above the market square",
    "Where bakers stack the loaves in golden rows",
    "The scent of bread is written on the air",
    "And every passing stranger stops and knows",
    "So keep the simple hours while they are near",
    "The kettle and the lantern and the pier",
    "The hills are grey with cloud and green with moss",
    "A shepherd whistles once and then is still",
    "The river keeps the secrets that it lost",
    "And turns them over gently at the mill",
};
constexpr size_t kNumVerse = sizeof(kVerse) / sizeof(kVerse[0]);
constexpr const char* kVerseInstruction = "Pick as many lines as you can from these poem lines and repeat them:\n";

int draw_len(int len, double ratio, std::mt19937_64& gen) {
  if (ratio <= 0) return len;
  const int lo = std::max(1, static_cast<int>(std::lround(len * (1 - ratio))));
  const int hi = std::max(lo, static_cast<int>(std::lround(len * (1 + ratio))));
  return std::uniform_int_distribution<int>(lo, hi)(gen);
}

std::string random_words(int n, std::mt19937_64& gen) {
  std::uniform_int_distribution<size_t> pick(0, kNumWords - 1);
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += kWords[pick(gen)];
  }
  return s;
}

int count_words(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int n = 0;
  while (in >> w) ++n;
  return n;
}

std::string sonnet_prompt(int words, std::mt19937_64& gen) {
  std::uniform_int_distribution<size_t> pick(0, kNumVerse - 1);
  std::string s = kVerseInstruction;
  int have = 0;
  while (have < words) {
    const std::string line = kVerse[pick(gen)];
    s += line + "\n";
    have += count_words(line);
  }
  return s;
}

// The prompt and reply of one file entry; empty prompt when it has none.
std::pair<std::string, std::string> entry_texts(const Json& j) {
  std::string prompt, reply;
  const auto take = [&](const Json& turns, const char* role_key, const char* text_key, const char* user,
                        const char* assistant) {
    for (const auto& t : turns) {
      if (!t.is_object() || !t.contains(text_key) || !t[text_key].is_string()) continue;
      const std::string role = t.value(role_key, std::string());
      if (prompt.empty() && role == user) {
        prompt = t[text_key].get<std::string>();
      } else if (!prompt.empty() && reply.empty() && role == assistant) {
        reply = t[text_key].get<std::string>();
      }
    }
  };
  if (!j.is_object()) return {};
  if (j.contains("conversations") && j["conversations"].is_array()) {
    take(j["conversations"], "from", "value", "human", "gpt");
  } else if (j.contains("messages") && j["messages"].is_array()) {
    take(j["messages"], "role", "content", "user", "assistant");
  } else if (j.contains("prompt") && j["prompt"].is_string()) {
    prompt = j["prompt"].get<std::string>();
  }
  return {prompt, reply};
}

int entry_output_len(const Json& j, const std::string& reply, int default_len) {
  for (const char* key : {"output_len", "max_tokens"}) {
    if (j.contains(key) && j[key].is_number_integer() && j[key].get<int>() > 0) return j[key].get<int>();
  }
  return reply.empty() ? default_len : std::max(1, count_words(reply));
}

Result<std::vector<BenchPrompt>> file_prompts(const BenchOptions& o, int count, uint64_t seed) {
  std::ifstream in(o.dataset);
  if (!in) return not_found(fmt::format("--dataset '{}': cannot read the file", o.dataset));
  std::stringstream buf;
  buf << in.rdbuf();
  LLMS_ASSIGN_OR_RETURN(auto all, parse_conversations(buf.str(), o.dataset, o.output_len));
  std::mt19937_64 gen(seed);
  std::shuffle(all.begin(), all.end(), gen);
  std::vector<BenchPrompt> out;
  for (int i = 0; i < count; ++i) {
    BenchPrompt p = all[static_cast<size_t>(i) % all.size()];
    if (o.output_len_set) p.output_len = draw_len(o.output_len, o.range_ratio, gen);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

Result<std::vector<BenchPrompt>> parse_conversations(const std::string& text, const std::string& source,
                                                     int default_output_len) {
  std::vector<Json> entries;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    Json arr = Json::parse(text, nullptr, false);
    if (arr.is_discarded()) return invalid_argument(fmt::format("{}: not valid JSON", source));
    for (auto& e : arr) entries.push_back(std::move(e));
  } else {
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      Json j = Json::parse(line, nullptr, false);
      if (j.is_discarded()) return invalid_argument(fmt::format("{}:{}: not a JSON object", source, n));
      entries.push_back(std::move(j));
    }
  }
  std::vector<BenchPrompt> out;
  for (const auto& j : entries) {
    auto [prompt, reply] = entry_texts(j);
    if (prompt.empty()) continue;
    out.push_back({std::move(prompt), entry_output_len(j, reply, default_output_len)});
  }
  if (out.empty()) {
    return invalid_argument(fmt::format(
        "{}: no entry with a prompt (expected \"conversations\", \"messages\" or \"prompt\" per line)", source));
  }
  return out;
}

Result<std::vector<BenchPrompt>> make_prompts(const BenchOptions& o, int count, uint64_t seed) {
  const bool named = o.dataset == "random" || o.dataset == "shared-prefix" || o.dataset == "sonnet";
  if (!named) {
    if (!std::filesystem::is_regular_file(o.dataset)) {
      return invalid_argument(fmt::format(
          "--dataset '{}': neither random, shared-prefix, sonnet nor a readable JSONL file", o.dataset));
    }
    return file_prompts(o, count, seed);
  }
  std::mt19937_64 gen(seed);
  std::vector<std::string> prefixes;
  if (o.dataset == "shared-prefix") {
    for (int i = 0; i < o.num_prefixes; ++i) prefixes.push_back(random_words(o.prefix_len, gen) + "\n");
  }
  std::vector<BenchPrompt> out;
  for (int i = 0; i < count; ++i) {
    const int in_len = draw_len(o.input_len, o.range_ratio, gen);
    const int out_len = draw_len(o.output_len, o.range_ratio, gen);
    std::string text;
    if (o.dataset == "sonnet") {
      text = sonnet_prompt(in_len, gen);
    } else if (o.dataset == "shared-prefix") {
      text = prefixes[static_cast<size_t>(i) % prefixes.size()] + random_words(in_len, gen);
    } else {
      text = random_words(in_len, gen);
    }
    out.push_back({std::move(text), out_len});
  }
  return out;
}

}  // namespace llms::benchserve
