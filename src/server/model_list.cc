#include "server/model_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "serving/served_name.h"

namespace llms {
namespace {

namespace fs = std::filesystem;

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (!line.empty()) out.push_back(line);
    begin = end + 1;
  }
  return out;
}

// A model's name from its path, as one model was always named: the file name without
// .gguf (a directory's own name).
std::string stem_name(const fs::path& p) {
  const fs::path clean = p.has_filename() ? p : p.parent_path();
  if (clean.extension() == ".gguf") return clean.stem().string();
  return clean.filename().string();
}

bool exists(std::string_view path) {
  std::error_code ec;
  return fs::exists(fs::path(path), ec);
}

// One `model` line: PATH (named after the file) or NAME=PATH.
Result<ModelEntry> parse_model_line(std::string_view line) {
  const size_t eq = line.find('=');
  if (exists(line) || eq == std::string_view::npos) return ModelEntry{stem_name(fs::path(line)), std::string(line), {}};
  ModelEntry e{std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)), {}};
  if (e.path.empty()) return invalid_argument(fmt::format("model '{}': the path is empty (NAME=PATH)", line));
  LLMS_RETURN_IF_ERROR(check_model_name(e.name).with_context(fmt::format("model '{}'", line)));
  return e;
}

// Each GGUF file and each Hugging Face model directory (one holding config.json) in
// `dir`, by name.
Result<std::vector<ModelEntry>> models_in(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return invalid_argument(fmt::format("models_dir: cannot read {}: {}", dir, ec.message()));
  std::vector<ModelEntry> out;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return invalid_argument(fmt::format("models_dir: cannot read {}: {}", dir, ec.message()));
    const fs::path p = it->path();
    if (p.filename().string().starts_with(".")) continue;
    std::error_code e2;
    const bool gguf = fs::is_regular_file(p, e2) && p.extension() == ".gguf";
    const bool hf = fs::is_directory(p, e2) && fs::is_regular_file(p / "config.json", e2);
    if (gguf || hf) out.push_back({stem_name(p), p.string(), {}});
  }
  if (out.empty()) {
    return invalid_argument(
        fmt::format("models_dir: {} holds no GGUF file (*.gguf) and no model directory (one with config.json)", dir));
  }
  std::sort(out.begin(), out.end(), [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; });
  return out;
}

ModelEntry* find(std::vector<ModelEntry>& models, std::string_view name) {
  for (ModelEntry& m : models) {
    if (m.name == name) return &m;
    if (std::find(m.aliases.begin(), m.aliases.end(), name) != m.aliases.end()) return &m;
  }
  return nullptr;
}

Status add_aliases(std::string_view text, std::vector<ModelEntry>& models) {
  for (std::string_view line : lines_of(text)) {
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return invalid_argument(fmt::format("alias: '{}' is not NAME=ALIAS", line));
    const std::string_view name = line.substr(0, eq), alias = line.substr(eq + 1);
    LLMS_RETURN_IF_ERROR(check_model_name(alias).with_context(fmt::format("alias '{}'", line)));
    ModelEntry* m = find(models, name);
    if (m == nullptr || m->name != name) {
      std::vector<std::string> names;
      for (const ModelEntry& e : models) names.push_back(e.name);
      return invalid_argument(fmt::format("alias '{}': no model '{}' is served (served: {})", line, name,
                                          fmt::join(names, ", ")));
    }
    if (find(models, alias) != nullptr) {
      return invalid_argument(fmt::format("alias '{}': '{}' already names a served model", line, alias));
    }
    m->aliases.emplace_back(alias);
  }
  return ok_status();
}

}  // namespace

Status check_model_name(std::string_view name) {
  if (name.empty()) return invalid_argument("a model needs a name");
  return check_served_name(name, "model");
}

bool serves_several_models(const ServerConfig& c) {
  return lines_of(c.model_path).size() > 1 || !c.models_dir.empty();
}

Result<std::vector<ModelEntry>> list_models(const ServerConfig& c) {
  std::vector<ModelEntry> models;
  if (!c.model_root.empty()) models.push_back({served_model_name(c), "", {}});
  const std::vector<std::string_view> lines = lines_of(c.model_path);
  for (std::string_view line : lines) {
    LLMS_ASSIGN_OR_RETURN(ModelEntry e, parse_model_line(line));
    models.push_back(std::move(e));
  }
  if (!c.model_name.empty() && c.model_root.empty()) {
    // model_name renames a model given by its path alone, as it always did.
    if (lines.empty() || (lines.front().find('=') != std::string_view::npos && !exists(lines.front()))) {
      return invalid_argument("model_name: names the first model given by its path alone (-m PATH); with "
                              "--model NAME=PATH or models_dir, name models there (and add names with alias)");
    }
    models.front().name = c.model_name;
  }
  if (!c.models_dir.empty()) {
    LLMS_ASSIGN_OR_RETURN(std::vector<ModelEntry> in_dir, models_in(c.models_dir));
    for (ModelEntry& e : in_dir) models.push_back(std::move(e));
  }
  if (models.empty()) {
    return invalid_argument("model: no model given (-m MODEL.gguf, --model NAME=PATH or --models-dir)");
  }
  for (size_t i = 0; i < models.size(); ++i) {
    const ModelEntry& m = models[i];
    // One model keeps any name it always had; several are told apart by their names.
    if (models.size() == 1) break;
    LLMS_RETURN_IF_ERROR(check_model_name(m.name).with_context(
        fmt::format("model {} (give it a name: --model NAME=PATH)", m.path.empty() ? c.model_root : m.path)));
    for (size_t j = 0; j < i; ++j) {
      if (models[j].name == m.name) {
        return invalid_argument(fmt::format("model name '{}' is given twice ({} and {}); name them apart with "
                                            "--model NAME=PATH",
                                            m.name, models[j].path, m.path));
      }
    }
  }
  LLMS_RETURN_IF_ERROR(add_aliases(c.alias, models));
  return models;
}

}  // namespace llms
