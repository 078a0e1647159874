// The MPI world of a group launched by mpirun (Open MPI): MPI_COMM_WORLD behind the
// Communicator interface. Built only where CMake finds MPI; elsewhere
// open_mpi_world() answers UNIMPLEMENTED (mpi_world_stub.cc), so a build without MPI
// still serves one process.
//
// Every collective is started non-blocking and polled: a wait past the step deadline
// (a rank that died or stopped answering) returns DEADLINE_EXCEEDED, and MPI's errors
// come back as values (MPI_ERRORS_RETURN) rather than aborting the job. After a
// failure the communicator refuses every later collective. split() makes subgroups
// (MPI_Comm_split) that share the world's failure: one failure ends them all, and the
// world's health() reports a failure in any of them.
//
// Thread-safety: MPI is initialised with MPI_THREAD_SERIALIZED: any one thread at a
// time may call (the engine thread on rank 0), as Communicator requires.
#pragma once

#include <memory>

#include "dist/communicator.h"

namespace llms {

struct MpiOptions {
  // The longest a collective of a step may wait for the other ranks (seconds).
  double step_timeout_s = 30;
};

// True when this build has MPI.
bool mpi_available();
// Initialises MPI (once per process) and returns the world; finalised when the
// result is destroyed, unless a collective failed (a dead rank would hang it).
Result<std::unique_ptr<Communicator>> open_mpi_world(const MpiOptions& options);
// Ends every rank of the world and this process with `exit_code` (MPI_Abort): what
// rank 0 does once its group has failed, so that mpirun exits non-zero and the
// orchestrator restarts the group. (Launch with `--mca orte_abort_on_non_zero_status 0`
// so that mpirun leaves rank 0 running when another rank dies, until it has answered
// the requests in flight.)
[[noreturn]] void abort_mpi_world(int exit_code);

}  // namespace llms
