// llmserve deploy   --root DIR --version NAME [--from FILE.gguf] [--meta FILE.toml] [--link] [--canary F]
//                   [--url URL --admin-token-file F]
// llmserve rollback --root DIR [--url URL --admin-token-file F]
// llmserve versions --root DIR [--url URL --admin-token-file F] [--json] [--prune]
//
// Without --url they change or read the model root's links only (a server started
// later serves `current`); with --url they ask the running server, which loads, gates
// and switches (docs/operations.md). A refused deploy exits 1 with the reason.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "deploy/admin_client.h"
#include "deploy/model_root.h"

namespace llms::cli {
namespace {

using nlohmann::json;

struct Target {
  std::string root;
  std::string url;
  std::string token_file;
  bool json_out = false;
};

void add_target(CLI::App* cmd, Target& t) {
  cmd->add_option("--root", t.root, "Model root (versions/, current, previous)")->required();
  cmd->add_option("--url", t.url, "A running server to act on (http://HOST:PORT)");
  cmd->add_option("--admin-token-file", t.token_file, "The server's admin token (with --url)");
}

// Calls the server, prints its answer, and fails (exit 1) when the action was refused.
json call(const Target& t, const std::string& method, const std::string& path, const json& body, double timeout_s) {
  if (t.token_file.empty()) fail(invalid_argument("--url needs --admin-token-file"));
  const std::string token = value_or_fail(read_admin_token_file(t.token_file));
  const AdminReply r = value_or_fail(admin_call(t.url, token, method, path, body.dump(), timeout_s));
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) fail(internal_error("the server's answer is not JSON: " + r.body));
  if (r.status != 200) {
    const std::string why = j.contains("message") ? j["message"].get<std::string>()
                            : j.contains("error") && j["error"].contains("message") ? j["error"]["message"].get<std::string>()
                                                                                     : r.body;
    if (t.json_out) std::printf("%s\n", j.dump(2).c_str());
    fail(failed_precondition(fmt::format("refused ({}): {}", r.status, why)));
  }
  return j;
}

void print_state(const json& state) {
  std::printf("current: %s\n", state.value("current", "").c_str());
  if (!state["previous"].is_null()) std::printf("previous: %s\n", state["previous"].get<std::string>().c_str());
  if (!state["candidate"].is_null()) {
    std::printf("canary: %s takes %.0f%% of new requests\n", state["candidate"].get<std::string>().c_str(),
                100 * state.value("canary_share", 0.0));
  }
}

void run_deploy(const Target& t, const std::string& version, const std::string& from, const std::string& meta,
                bool link, double canary) {
  ModelRoot root = value_or_fail(ModelRoot::open(t.root, true));
  if (!from.empty()) ok_or_fail(root.install(version, from, link, meta));
  if (!root.has_version(version)) fail(not_found(fmt::format("no version '{}' in {}: give --from FILE.gguf", version, t.root)));
  if (t.url.empty()) {
    if (canary > 0) fail(invalid_argument("--canary needs a running server (--url)"));
    ok_or_fail(root.switch_to(version));
    std::printf("%s: current -> %s (links only; a server started on the root serves it)\n", t.root.c_str(),
                version.c_str());
    return;
  }
  const json j = call(t, "POST", "/admin/deploy", json{{"version", version}, {"canary", canary}}, 3600);
  std::printf("%s\n", j.value("message", "").c_str());
  print_state(j["state"]);
}

void run_rollback(const Target& t) {
  if (t.url.empty()) {
    ModelRoot root = value_or_fail(ModelRoot::open(t.root, false));
    ok_or_fail(root.rollback());
    std::printf("%s: current -> %s\n", t.root.c_str(), root.current().value_or("?").c_str());
    return;
  }
  print_state(call(t, "POST", "/admin/rollback", json::object(), 3600)["state"]);
}

void run_versions(const Target& t, bool prune) {
  json versions = json::array();
  if (prune) {
    if (!t.url.empty()) fail(invalid_argument("--prune works on the model root (--root), not a server (--url)"));
    ModelRoot root = value_or_fail(ModelRoot::open(t.root, false));
    for (const std::string& name : value_or_fail(root.prune())) std::printf("removed %s\n", name.c_str());
  }
  if (t.url.empty()) {
    ModelRoot root = value_or_fail(ModelRoot::open(t.root, false));
    for (const VersionInfo& v : root.versions()) {
      versions.push_back({{"name", v.name},
                          {"current", v.current},
                          {"previous", v.previous},
                          {"model_bytes", v.model_bytes},
                          {"mark", v.mark.empty() ? json(nullptr) : json(v.mark)},
                          {"mark_reason", v.mark_reason}});
    }
  } else {
    const json j = call(t, "GET", "/admin/versions", json::object(), 60);
    versions = j["state"]["versions"];
    if (!t.json_out) print_state(j["state"]);
  }
  if (t.json_out) return (void)std::printf("%s\n", versions.dump(2).c_str());
  for (const json& v : versions) {
    std::string role = v.value("current", false) ? " current" : v.value("previous", false) ? " previous" : "";
    if (v.value("loaded", false)) role += " loaded";
    std::string gate;
    if (v.contains("gate") && !v["gate"].is_null()) gate = "  gate: " + v["gate"].value("reason", "");
    if (v.contains("mark") && v["mark"].is_string()) {
      role += " " + v["mark"].get<std::string>() + " (" + v.value("mark_reason", "") + ")";
    }
    std::printf("%-24s %12lld bytes%s%s\n", v.value("name", "").c_str(), static_cast<long long>(v.value("model_bytes", 0)),
                role.c_str(), gate.c_str());
  }
}

}  // namespace

void add_deploy_commands(CLI::App& app) {
  struct DeployOptions {
    Target t;
    std::string version, from, meta;
    bool link = false;
    double canary = 0;
  };
  auto d = std::make_shared<DeployOptions>();
  CLI::App* deploy = app.add_subcommand("deploy", "Install a model version in a model root and make it serve");
  add_target(deploy, d->t);
  deploy->add_option("--version", d->version, "Version name ([A-Za-z0-9._-]+)")->required();
  deploy->add_option("--from", d->from, "GGUF file to install as the version");
  deploy->add_option("--meta", d->meta, "meta.toml to install beside it (notes, gate thresholds, KV type)");
  deploy->add_flag("--link", d->link, "Link the file instead of copying it");
  deploy->add_option("--canary", d->canary, "Share of new requests for the new version until promoted (with --url)")
      ->check(CLI::Range(0.0, 0.99));
  deploy->callback([d] { run_deploy(d->t, d->version, d->from, d->meta, d->link, d->canary); });

  auto r = std::make_shared<Target>();
  CLI::App* rollback = app.add_subcommand("rollback", "Make the previous version serve again");
  add_target(rollback, *r);
  rollback->callback([r] { run_rollback(*r); });

  struct VersionsOptions {
    Target t;
    bool prune = false;
  };
  auto v = std::make_shared<VersionsOptions>();
  CLI::App* versions = app.add_subcommand(
      "versions", "List a model root's versions (and a server's state); refused and killed ones are marked");
  add_target(versions, v->t);
  versions->add_flag("--json", v->t.json_out, "JSON output");
  versions->add_flag("--prune", v->prune, "Remove the versions marked refused or killed (never current or previous)");
  versions->callback([v] { run_versions(v->t, v->prune); });
}

}  // namespace llms::cli
