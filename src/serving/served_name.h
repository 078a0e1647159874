// The rule for a name a request's `model` can say: a served model, its alias, a LoRA
// adapter. Such a name is a metric label's value, a path segment of /v1/models/{id}
// and an item of vLLM's comma-separated adapter lists, so it is plain: at most 128
// letters, digits and . _ - : / @ +.
#pragma once

#include <string_view>

#include "base/status.h"

namespace llms {

// INVALID_ARGUMENT "{what} name '{name}': use at most 128 letters, ..." when `name` is
// not plain (an empty name is the caller's to name: it says which flag lacks one).
Status check_served_name(std::string_view name, std::string_view what);

}  // namespace llms
