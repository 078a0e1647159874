// GgufWriter: builds a GGUF v3 file from metadata and tensors and writes it atomically
// (temporary file, then rename). Used by `convert`, `quantize` and `make-model`.
//
// Tensor data is either borrowed (a span that must outlive write()) or produced by a
// callback at write time, so models larger than memory can be streamed to disk.
// Not thread-safe; one writer per output file.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf_value.h"
#include "tensor/dtype.h"

namespace llms {

class GgufWriter {
 public:
  // Fills exactly the tensor's byte size.
  using Filler = std::function<void(std::span<uint8_t> out)>;

  explicit GgufWriter(uint32_t alignment = 32);

  // Sets or replaces a key; keys keep the order of their first set().
  void set(const std::string& key, gguf::Value value);
  void erase(const std::string& key);

  // `ne` in GGUF order (innermost first). CHECKs that the row is whole blocks.
  void add_tensor(const std::string& name, DType dtype, std::vector<int64_t> ne, std::span<const uint8_t> data);
  void add_tensor(const std::string& name, DType dtype, std::vector<int64_t> ne, Filler fill);

  Status write(const std::string& path) const;
  std::vector<uint8_t> write_to_memory() const;

  size_t num_tensors() const { return tensors_.size(); }

 private:
  struct PendingTensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> ne;
    uint64_t num_bytes;
    std::span<const uint8_t> data;
    Filler fill;
  };
  // Emits the file through `sink`, which returns false on an I/O error.
  bool emit(const std::function<bool(const void*, size_t)>& sink) const;

  uint32_t alignment_;
  std::vector<std::pair<std::string, gguf::Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

class GgufFile;
// A writer that holds every key (but general.alignment) and tensor of `file`, its
// tensors read (or computed, for a model directory's) at write time: a conversion
// starts here. `file` must outlive the writer's write().
GgufWriter gguf_writer_for(const GgufFile& file);

// A SentencePiece-style vocabulary as GGUF tokenizer metadata (tokenizer.ggml.*), with
// <unk> = 0, <s> = 1, </s> = 2 as llama2.c checkpoints and generated models have them.
// The value of general.file_type (llama.cpp's file-type numbering, which is not the
// tensor type ids) for a file whose matrices are all `weights`; k-quants count as
// their "S" (small, uniform) variant. 0 (all F32) for types without a number.
uint32_t gguf_file_type(DType weights);

struct SpmVocabulary {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // GGUF token types: 1 normal, 2 unknown, 3 control, 5 unused, 6 byte
};
void set_spm_vocabulary(GgufWriter& w, const SpmVocabulary& vocab);

}  // namespace llms
