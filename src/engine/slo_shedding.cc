#include "engine/slo_shedding.h"

#include <algorithm>
#include <cmath>

#include "engine/slo.h"

namespace llms {

void SloShedder::on_schedule(int64_t now_ns, int64_t admitted, bool backlog) {
  if (last_backlog_ && now_ns > last_ns_) {
    window_.push_back({now_ns - last_ns_, admitted});
    window_ns_ += now_ns - last_ns_;
    window_admitted_ += admitted;
    if (window_.size() > kWindow) {
      window_ns_ -= window_.front().ns;
      window_admitted_ -= window_.front().admitted;
      window_.pop_front();
    }
  }
  last_ns_ = now_ns;
  last_backlog_ = backlog;
}

double SloShedder::service_rate() const {
  if (window_admitted_ < kMinAdmissions || window_ns_ <= 0) return 0;
  return static_cast<double>(window_admitted_) / (static_cast<double>(window_ns_) * 1e-9);
}

double SloShedder::step_s() const {
  if (window_.empty()) return 0;
  return static_cast<double>(window_ns_) * 1e-9 / static_cast<double>(window_.size());
}

std::vector<ShedDecision> SloShedder::unattainable(const std::vector<Sequence*>& ordered, int64_t now_ns,
                                                   int64_t budget_tokens, int64_t decoding) const {
  std::vector<ShedDecision> shed;
  const double rate = service_rate();
  if (rate <= 0) return shed;
  const double step = step_s();
  int64_t ahead = 0;  // kept requests before this one
  for (Sequence* s : ordered) {
    const int64_t deadline = ttft_deadline_ns(*s);
    if (deadline > 0 && s->first_scheduled_ns == 0 && s->first_token_ns == 0) {
      const int64_t budget = std::max<int64_t>(1, budget_tokens - decoding);
      const int64_t steps = std::max<int64_t>(1, (s->prompt_len + budget - 1) / budget);
      const double wait_s = static_cast<double>(ahead) / rate + static_cast<double>(steps) * step;
      const double forecast_ns = static_cast<double>(now_ns) + wait_s * 1e9;
      if (forecast_ns > static_cast<double>(deadline)) {
        shed.push_back({s, (forecast_ns - static_cast<double>(s->arrival_ns)) * 1e-9});
        continue;
      }
    }
    ++ahead;
  }
  return shed;
}

double SloShedder::retry_after_s(size_t waiting) const {
  const double rate = service_rate();
  if (rate <= 0) return 1;
  return std::max(1.0, std::ceil(static_cast<double>(waiting) / rate));
}

}  // namespace llms
