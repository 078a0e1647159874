#include "serving/tensor_parallel_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/log.h"
#include "dist/group_check.h"
#include "dist/mpi_world.h"
#include "engine/tensor_parallel_worker.h"
#include "model/model.h"

namespace llms {
namespace {

constexpr const char* kVersion = "llmserve 0.1.0";

// `count` bytes of `path` from `offset` (fewer at its end) into the hash.
Status add_file_bytes(HashBuilder& h, const std::string& path, uint64_t offset, uint64_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(fmt::format("{}: cannot open", path));
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<char> buf(static_cast<size_t>(count));
  in.read(buf.data(), static_cast<std::streamsize>(count));
  h.add_bytes(buf.data(), static_cast<size_t>(in.gcount()));
  return ok_status();
}

}  // namespace

Result<Hash128> model_identity(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  HashBuilder h;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      h.add(f.filename().string()).add_pod(fs::file_size(f, ec));
      LLMS_RETURN_IF_ERROR(add_file_bytes(h, f.string(), 0, 1 << 20));
    }
    return h.finish128();
  }
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return not_found(fmt::format("{}: {}", path, ec.message()));
  h.add_pod(size);
  LLMS_RETURN_IF_ERROR(add_file_bytes(h, path, 0, 8 << 20));
  LLMS_RETURN_IF_ERROR(add_file_bytes(h, path, size > (1 << 20) ? size - (1 << 20) : 0, 1 << 20));
  return h.finish128();
}

Result<Hash128> build_identity() {
  HashBuilder h;
  h.add(kVersion);
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  LLMS_RETURN_IF_ERROR(add_file_bytes(h, exe, 0, std::filesystem::file_size(exe)));
  return h.finish128();
}

std::string group_flags(Parallelism p) {
  if (p.pipeline == 1) return fmt::format("--tensor-parallel {}", p.tensor);
  if (p.tensor == 1) return fmt::format("--pipeline-parallel {}", p.pipeline);
  return fmt::format("--tensor-parallel {} --pipeline-parallel {}", p.tensor, p.pipeline);
}

Result<std::unique_ptr<Communicator>> open_serving_group(const GroupOptions& o) {
  MpiOptions mpi;
  mpi.step_timeout_s = o.step_timeout_s;
  LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> ranks, open_mpi_world(mpi));
  const int size = o.parallel.ranks();
  if (ranks->size() != size) {
    return failed_precondition(fmt::format("{} needs {} ranks (mpirun -np {}), this group has {}",
                                           group_flags(o.parallel), size, size, ranks->size()));
  }
  LLMS_ASSIGN_OR_RETURN(const Hash128 build, build_identity());
  LLMS_ASSIGN_OR_RETURN(const Hash128 model, model_identity(o.model_path));
  const GroupFact facts[] = {{"build", build}, {"model file", model}};
  LLMS_RETURN_IF_ERROR(check_group_agrees(*ranks, facts));
  log_info("{}: rank {} of {}, same build and model file on every rank", group_flags(o.parallel), ranks->rank(),
           ranks->size());
  return ranks;
}

Status run_group_worker(Communicator& ranks, const GroupOptions& o) {
  LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(o.model_path, &ranks, o.parallel));
  const WeightsMemory mem = model->weights_memory();
  const TensorShard& s = model->shard();
  log_info("rank {} (stage {}, tensor rank {}): its share of {}: {:.1f} MiB of weights, {} KV heads, layers [{}, {})",
           ranks.rank(), s.stage, s.rank, o.model_path, static_cast<double>(mem.owned_bytes) / (1 << 20),
           model->config().n_head_kv, s.layers.first, s.layers.first + s.layers.count);
  return run_tensor_parallel_worker(*model, o.threads);
}

}  // namespace llms
