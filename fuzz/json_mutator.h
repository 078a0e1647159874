// A structure-aware mutator for JSON request bodies (libFuzzer's custom mutator): a
// body that parses is changed as a tree — a node replaced by a value of another type
// or an edge value, an API parameter added, a key or element removed or duplicated —
// and written back, so that mutations reach the validation code instead of dying in
// the JSON parser. Bodies that do not parse, and one mutation in eight, go to
// libFuzzer's own byte mutations.
//
// Thread-safety: pure function of its arguments (libFuzzer calls it from one thread).
#pragma once

#include <cstddef>
#include <cstdint>

namespace llms::fuzz {

size_t mutate_json(uint8_t* data, size_t size, size_t max_size, unsigned int seed);

}  // namespace llms::fuzz
