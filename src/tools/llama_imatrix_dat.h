// llama.cpp's legacy importance file ("imatrix.dat"): what `llama-imatrix` wrote
// before it moved to GGUF, and still writes with `--output-format dat`. Little-endian,
// no magic, no version:
//
//   int32 n_entries
//   n_entries times:
//     int32 name_len, name bytes (the weight tensor's name, no terminator)
//     int32 ncall   (chunks of calibration text behind the entry)
//     int32 nval    (cols, or cols * n_expert for a 3-D expert tensor)
//     float values[nval]   the mean of x^2 over the entry's tokens, times ncall
//   optional: int32 chunk count of the whole run
//   optional: int32 len, dataset file name bytes
//
// llama.cpp's quantizer divides the values by ncall (when > 0): the mean squared
// activation. Experts a text never reached are stored as 1 * ncall. We keep the values
// as sums with count = ncall (ncall 0: the values are the means, count 1), so
// ImportanceTable::importance() yields the same means as for a GGUF file with the same
// underlying sums.
//
// Thread-safety: a free function over a file it reads whole.
#pragma once

#include <string>

#include "base/status.h"
#include "tools/importance_file.h"

namespace llms {

// INVALID_ARGUMENT naming the file and the entry for anything that does not parse:
// truncation, negative or oversized counts, duplicate names, values that are not
// finite and non-negative, bytes past the end.
Result<ImportanceTable> read_llama_imatrix_dat(const std::string& path);

}  // namespace llms
