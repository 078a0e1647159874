// open_mpi_world() of a build without MPI.
#include "dist/mpi_world.h"

#include <cstdlib>

namespace llms {

bool mpi_available() { return false; }

Result<std::unique_ptr<Communicator>> open_mpi_world(const MpiOptions& /*options*/) {
  return unimplemented("this build of llmserve has no MPI (install libopenmpi-dev and rebuild) for --tensor-parallel");
}

void abort_mpi_world(int exit_code) { std::_Exit(exit_code); }

}  // namespace llms
