#include "dist/group_check.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

namespace llms {

Status check_group_agrees(Communicator& ranks, std::span<const GroupFact> facts) {
  std::vector<uint8_t> mine(facts.size() * sizeof(Hash128));
  for (size_t i = 0; i < facts.size(); ++i) std::memcpy(mine.data() + i * sizeof(Hash128), &facts[i].hash, sizeof(Hash128));
  std::vector<uint8_t> all;
  LLMS_RETURN_IF_ERROR(ranks.allgather(mine, all));
  for (int r = 1; r < ranks.size(); ++r) {
    for (size_t i = 0; i < facts.size(); ++i) {
      const uint8_t* theirs = all.data() + static_cast<size_t>(r) * mine.size() + i * sizeof(Hash128);
      if (std::memcmp(theirs, all.data() + i * sizeof(Hash128), sizeof(Hash128)) != 0) {
        return failed_precondition(fmt::format("rank {}'s {} differs from rank 0's: every rank must run the same build "
                                               "of llmserve on the same model file",
                                               r, facts[i].name));
      }
    }
  }
  return ok_status();
}

}  // namespace llms
