// The tensor-parallel allreduce's cost per message size: rank-order allreduce_sum()
// of dist/mpi_world.h (what the forward pass calls twice per layer) timed on floats
// of the sizes a step sends — one row of the hidden state per token, for hidden
// sizes of the models in docs/benchmarks.md. Launch under mpirun; rank 0 prints one
// line per size: floats, bytes, median and p90 microseconds per call.
//
//   mpirun -np 2 build/release/bench/allreduce_bench [--rounds N] [--sizes a,b,...]
//   mpirun -np 2 --mca btl tcp,self ...   (TCP loopback instead of shared memory)
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "dist/mpi_world.h"

namespace {

// Median and 90th percentile of `v` (sorted in place).
std::pair<double, double> median_p90(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 9 / 10)]};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time the tensor-parallel allreduce per message size (run under mpirun)."};
  int rounds = 200;
  // Hidden sizes 768 (llama-110m), 2048 (TinyLlama-1.1B) and 4096 (7B), times 1 token
  // (decode), 32 (a batched step) and 512 (a prefill chunk).
  std::vector<int64_t> sizes = {768, 2048, 4096, 768 * 32, 2048 * 32, 4096 * 32, 2048 * 512, 4096 * 512};
  app.add_option("--rounds", rounds, "Timed calls per size (after 10 untimed ones)")->check(CLI::Range(1, 1000000));
  app.add_option("--sizes", sizes, "Message sizes in floats")->delimiter(',')->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  auto world = llms::open_mpi_world(llms::MpiOptions{});
  if (!world.ok()) {
    std::fprintf(stderr, "allreduce_bench: %s\n", world.status().to_string().c_str());
    return 1;
  }
  llms::Communicator& comm = **world;
  if (comm.rank() == 0) std::printf("ranks %d\nfloats bytes median_us p90_us\n", comm.size());
  for (int64_t n : sizes) {
    std::vector<float> data(static_cast<size_t>(n), 1.0f);
    std::vector<double> us;
    for (int i = 0; i < rounds + 10; ++i) {
      std::fill(data.begin(), data.end(), 1.0f);
      const auto t0 = std::chrono::steady_clock::now();
      if (llms::Status s = comm.allreduce_sum(data.data(), n); !s.ok()) {
        std::fprintf(stderr, "allreduce_bench: %s\n", s.to_string().c_str());
        return 1;
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= 10) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    // Every element is the number of ranks: the sum really ran.
    if (data[0] != static_cast<float>(comm.size()) || data[static_cast<size_t>(n - 1)] != static_cast<float>(comm.size())) {
      std::fprintf(stderr, "allreduce_bench: wrong sum %g\n", data[0]);
      return 1;
    }
    const auto [med, p90] = median_p90(us);
    if (comm.rank() == 0) std::printf("%lld %lld %.1f %.1f\n", static_cast<long long>(n), static_cast<long long>(n * 4), med, p90);
  }
  return 0;
}
