// BpeModel: BPE over token ids. A pre-tokenized piece starts as one symbol per byte
// (the token of that byte's alphabet character, see byte_level.h), or, for the
// character-level BPE of SentencePiece-style tokenizer.json files, one symbol per
// character (with <0xNN> byte fallback and fused unknowns as Hugging Face's BPE does
// it); the adjacent pair with the lowest merge rank is merged, leftmost first among
// equal ranks, until no pair has a merge. Merges are looked up by (left id, right id)
// in a flat hash table built once from the merges.
//
// Thread-safety: immutable after build(); encode_piece() may run on many threads, each
// with its own BpeScratch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace llms {

// Reusable buffers of one encode call.
struct BpeScratch {
  std::vector<int32_t> ids;
  std::vector<int32_t> prev;
  std::vector<int32_t> next;
  std::vector<int32_t> rank;    // rank of the pair (i, next[i]); INT32_MAX when none
  std::vector<int32_t> result;  // token that pair merges into
  std::vector<uint64_t> heap;   // (rank << 32 | position), min-heap
};

struct BpeOptions {
  // A piece that is itself a normal token is emitted as that token (LLaMA-3 style).
  bool ignore_merges = false;
  // true: one symbol per byte, in the byte-level alphabet. false: one per character.
  bool byte_level = true;
  // Character level: a character that is not a token becomes its <0xNN> tokens.
  bool byte_fallback = false;
  // Character level: consecutive unknown characters become one unknown token.
  bool fuse_unk = false;
  // Character level: the texts a character has when it is not the first of a piece,
  // and when it is the last (the merged token drops the right side's prefix).
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  // A merge naming a text that is not a token is an error (tokenizer.json) instead
  // of being skipped (GGUF files written by some converters have such merges).
  bool strict_merges = false;
  // Where the merges come from, for error messages.
  std::string merges_name = "tokenizer.ggml.merges";
};

class BpeModel {
 public:
  // Pieces at least this long use the heap-driven merge loop; shorter ones scan.
  static constexpr size_t kHeapThreshold = 48;

  // `ignore_merges`: a piece that is itself a normal token is emitted as that token
  // (LLaMA-3 style vocabularies). Merges naming texts that are not tokens are skipped.
  static Result<BpeModel> build(const Vocab& vocab, bool ignore_merges);
  // `vocab` must outlive the model when !opts.byte_level (characters are looked up in it).
  static Result<BpeModel> build(const Vocab& vocab, const BpeOptions& opts);

  // Which merge loop runs: by piece length, or forced (tests check that both agree).
  enum class MergeLoop { kAuto, kScan, kHeap };

  // Appends the ids of one piece (raw bytes).
  void encode_piece(std::string_view piece, std::vector<int32_t>* out, BpeScratch& scratch,
                    MergeLoop loop = MergeLoop::kAuto) const;

  int32_t num_merges() const { return num_merges_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  // Open addressing over keys (left << 32 | right); empty slots hold kEmptyKey.
  static constexpr uint64_t kEmptyKey = ~0ull;
  const Merge* find_merge(int32_t left, int32_t right) const;
  Status add_merges(const Vocab& vocab);
  void insert_merge(int32_t left, int32_t right, Merge m);
  // Fills s.ids with the first symbols of `piece`; returns their number.
  size_t byte_symbols(std::string_view piece, BpeScratch& s) const;
  size_t char_symbols(std::string_view piece, BpeScratch& s) const;
  // Refreshes rank[i] and result[i] for the pair that starts at symbol i.
  void update_pair(BpeScratch& s, int32_t i) const;
  // Merges symbol i with its right neighbour.
  void merge_at(BpeScratch& s, int32_t i) const;
  // Scanning for the best pair costs O(n) per merge but no heap traffic: fastest for
  // the short pieces of ordinary text. The heap keeps long pieces O(n log n).
  void merge_by_scan(BpeScratch& s) const;
  void merge_by_heap(size_t n, BpeScratch& s) const;

  int32_t byte_token_[256] = {};  // -1 when the alphabet character is not a token
  int32_t byte_fallback_[256] = {};  // <0xNN>; -1 when absent or byte fallback is off
  const Vocab* vocab_ = nullptr;     // character level only
  BpeOptions opts_;
  std::vector<uint64_t> keys_;
  std::vector<Merge> values_;
  uint64_t mask_ = 0;
  int32_t num_merges_ = 0;
  int32_t unk_id_ = -1;
  TextIdMap raw_to_id_;  // raw bytes of each normal token → id, for ignore_merges
};

}  // namespace llms
