#include "engine/step_plan.h"

#include <cstring>

namespace llms {
namespace {

class Writer {
 public:
  explicit Writer(PlanKind kind) { put<uint8_t>(static_cast<uint8_t>(kind)); }
  template <typename T>
  Writer& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  Writer& ints(std::span<const int32_t> v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    bytes_.insert(bytes_.end(), p, p + v.size_bytes());
    return *this;
  }
  std::vector<uint8_t> done() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  template <typename T>
  bool get(T& v) {
    if (b_.size() - at_ < sizeof(T)) return false;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool ints(std::vector<int32_t>& v) {
    uint32_t n = 0;
    if (!get(n) || (b_.size() - at_) / sizeof(int32_t) < n) return false;
    v.resize(n);
    std::memcpy(v.data(), b_.data() + at_, n * sizeof(int32_t));
    at_ += n * sizeof(int32_t);
    return true;
  }
  bool at_end() const { return at_ == b_.size(); }

 private:
  std::span<const uint8_t> b_;
  size_t at_ = 0;
};

Status truncated() { return data_loss("step plan: truncated or malformed message"); }

}  // namespace

std::vector<uint8_t> encode_setup(const PlanSetup& s) {
  return Writer(PlanKind::kSetup)
      .put(s.num_blocks)
      .put(s.block_size)
      .put(static_cast<uint32_t>(s.k_type))
      .put(static_cast<uint32_t>(s.v_type))
      .put<uint8_t>(s.commit_at_start ? 1 : 0)
      .put(s.context_length)
      .done();
}

std::vector<uint8_t> encode_forward(std::span<const SequenceChunk> chunks) {
  Writer w(PlanKind::kForward);
  w.put<uint32_t>(static_cast<uint32_t>(chunks.size()));
  for (const SequenceChunk& c : chunks) {
    w.put(c.start_pos).put<uint8_t>(static_cast<uint8_t>(c.logits)).put(c.early_exit_from);
    w.ints(c.tokens).ints(c.block_table);
  }
  return w.done();
}

std::vector<uint8_t> encode_discard(std::span<const int32_t> blocks) {
  return Writer(PlanKind::kDiscard).ints(blocks).done();
}

std::vector<uint8_t> encode_stop() { return Writer(PlanKind::kStop).done(); }
std::vector<uint8_t> encode_heartbeat() { return Writer(PlanKind::kHeartbeat).done(); }

Result<StepPlan> decode_plan(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  StepPlan p;
  uint8_t kind = 0;
  if (!r.get(kind)) return truncated();
  p.kind = static_cast<PlanKind>(kind);
  switch (p.kind) {
    case PlanKind::kSetup: {
      uint32_t k = 0, v = 0;
      uint8_t commit = 0;
      if (!r.get(p.setup.num_blocks) || !r.get(p.setup.block_size) || !r.get(k) || !r.get(v) || !r.get(commit) ||
          !r.get(p.setup.context_length)) {
        return truncated();
      }
      p.setup.k_type = static_cast<DType>(k);
      p.setup.v_type = static_cast<DType>(v);
      p.setup.commit_at_start = commit != 0;
      break;
    }
    case PlanKind::kForward: {
      uint32_t n = 0;
      if (!r.get(n)) return truncated();
      p.tokens_.resize(n);
      p.tables_.resize(n);
      p.chunks.resize(n);
      for (uint32_t i = 0; i < n; ++i) {
        SequenceChunk& c = p.chunks[i];
        uint8_t logits = 0;
        if (!r.get(c.start_pos) || !r.get(logits) || !r.get(c.early_exit_from) || !r.ints(p.tokens_[i]) ||
            !r.ints(p.tables_[i]) || logits > static_cast<uint8_t>(LogitsWanted::kAll)) {
          return truncated();
        }
        c.logits = static_cast<LogitsWanted>(logits);
        c.tokens = p.tokens_[i];
        c.block_table = p.tables_[i];
      }
      break;
    }
    case PlanKind::kDiscard:
      if (!r.ints(p.blocks)) return truncated();
      break;
    case PlanKind::kStop:
    case PlanKind::kHeartbeat:
      break;
    default:
      return data_loss("step plan: unknown message kind");
  }
  if (!r.at_end()) return truncated();
  return p;
}

}  // namespace llms
