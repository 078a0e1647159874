#include "serving/engine_target.h"

#include <fmt/format.h>

namespace llms {

Status EngineTarget::check(const Route& route) const {
  if (route.precision.empty() || route.precision == "auto") return ok_status();
  return invalid_argument(fmt::format(
      "precision '{}': this server holds one precision of the model (start it with --precision-variants)",
      route.precision));
}

Result<std::shared_ptr<RequestHandle>> EngineTarget::submit(RequestParams params, const Route& route,
                                                            double* retry_after_s) {
  LLMS_RETURN_IF_ERROR(check(route));
  return engine_.submit(std::move(params), retry_after_s);
}

}  // namespace llms
