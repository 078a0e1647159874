// The start-up check of a tensor-parallel group: every rank must run the same build
// on the same model file, or their shares would not add up to one model. Each rank
// states its facts as hashes; every rank compares every rank's with rank 0's and so
// reaches the same verdict, and all refuse to start together.
//
// Thread-safety: a collective (Communicator's rules).
#pragma once

#include <span>
#include <string>

#include "base/hash.h"
#include "dist/communicator.h"

namespace llms {

struct GroupFact {
  std::string name;  // "build", "model file": what the error names
  Hash128 hash;
};

// FAILED_PRECONDITION naming the first rank and fact that differ from rank 0's; the
// group's error if the exchange fails. Every rank passes its facts in the same order.
Status check_group_agrees(Communicator& ranks, std::span<const GroupFact> facts);

}  // namespace llms
