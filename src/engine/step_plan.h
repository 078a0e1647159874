// StepPlan: what rank 0 of a tensor-parallel group tells the other ranks, one message
// per pass, so that every rank runs the same forward pass over its share of the
// model: the setup of the KV pool once (its block count, chosen by rank 0's engine),
// then each pass's chunks (tokens, start positions, block tables, the logits wanted),
// blocks whose memory to give back, and stop. The block tables carry all the state a
// worker needs: rank 0's block manager decides every block id, each rank's pool holds
// its own KV heads of those blocks, so workers keep no sequences of their own (a new
// sequence is a new table; a finished one's blocks simply stop appearing).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/batch.h"
#include "tensor/dtype.h"

namespace llms {

// kHeartbeat: an idle group's round trip (every rank answers in an allgather), so that a
// dead rank is noticed while no request runs.
enum class PlanKind : uint8_t { kSetup = 1, kForward = 2, kDiscard = 3, kStop = 4, kHeartbeat = 5 };

struct PlanSetup {
  int32_t num_blocks = 0;
  int32_t block_size = 0;
  DType k_type = DType::kF16, v_type = DType::kF16;
  bool commit_at_start = false;
  int32_t context_length = 0;
};

struct StepPlan {
  PlanKind kind = PlanKind::kStop;
  PlanSetup setup;                     // kSetup
  std::vector<SequenceChunk> chunks;   // kForward: views of tokens_ and tables_
  std::vector<int32_t> blocks;         // kDiscard

  // Owned storage of the decoded chunks.
  std::vector<std::vector<int32_t>> tokens_, tables_;
};

std::vector<uint8_t> encode_setup(const PlanSetup& setup);
std::vector<uint8_t> encode_forward(std::span<const SequenceChunk> chunks);
std::vector<uint8_t> encode_discard(std::span<const int32_t> blocks);
std::vector<uint8_t> encode_stop();
std::vector<uint8_t> encode_heartbeat();
// DATA_LOSS for bytes that are not a whole plan.
Result<StepPlan> decode_plan(std::span<const uint8_t> bytes);

}  // namespace llms
