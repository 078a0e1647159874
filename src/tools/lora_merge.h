// A LoRA adapter merged into its base's weights, for `llmserve quantize --lora`: each
// adapted matrix becomes W + s * B A (s: the adapter's own scale, alpha / rank or
// rsLoRA's alpha / sqrt(rank), times the caller's), so that a fine-tune that serves
// alone costs no adapter pass. The quantizer then writes the merged matrices in the
// requested type like any other.
//
// Thread-safety: immutable after prepare(); merged() may be called from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "io/gguf_file.h"
#include "io/lora_file.h"

namespace llms {

class LoraMerge {
 public:
  // Reads the adapter at `path` (a GGUF adapter or a PEFT directory) for `base`;
  // INVALID_ARGUMENT when a target is not a matrix of the base or its shape differs,
  // or `scale` is not finite; the reader's errors otherwise.
  static Result<LoraMerge> prepare(const std::string& path, const GgufFile& base, float scale);

  // Whether the adapter changes `tensor`.
  bool adapts(const std::string& tensor) const { return by_target_.count(tensor) > 0; }
  // `t` of `base` decoded to F32 with the adapter's product added: [rows, cols]. The
  // product is summed in double and added once, so each merged weight is W + s B A
  // rounded once to F32.
  std::vector<float> merged(const GgufFile& base, const GgufTensorInfo& t, ThreadPool& pool) const;
  // How the file was merged, for the output's metadata.
  std::string describe() const;

 private:
  LoraFile file_;
  float scale_ = 1.0f;
  std::map<std::string, size_t> by_target_;  // base tensor name -> file_.matrices index
};

}  // namespace llms
