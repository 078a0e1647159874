#include "server/http_metrics.h"

namespace llms {

std::string_view method_label(std::string_view method) {
  static constexpr std::string_view kMethods[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                  "CONNECT", "OPTIONS", "TRACE", "PATCH"};
  if (method.empty()) return "-";
  for (std::string_view m : kMethods) {
    if (m == method) return m;
  }
  return "other";
}

HttpMetrics::HttpMetrics(Registry& r)
    : http_requests(r.counter_family("llmserve_http_requests_total",
                                     "HTTP requests answered, by endpoint, status and the model version that answered.",
                                     {"endpoint", "method", "status", "version"})),
      http_duration(r.histogram_family("llmserve_http_request_duration_seconds",
                                       "Time from a request's arrival to the last byte of its response queued.",
                                       {"endpoint", "version"}, latency_buckets())),
      open_connections(r.gauge("llmserve_http_open_connections", "Open HTTP connections.")),
      active_requests(r.gauge("llmserve_http_active_requests", "Completion requests being answered (queued or running).")),
      client_disconnects(r.counter("llmserve_http_client_disconnects_total",
                                   "Completion requests cancelled because the client went away.")),
      streamed_chunks(r.counter("llmserve_http_stream_chunks_total", "Server-sent event chunks written.")),
      refused_connections(r.counter_family("llmserve_http_refused_connections_total",
                                           "Connections answered 503 and closed at once, by the cap they hit.",
                                           {"reason"})),
      client_timeouts(r.counter_family("llmserve_http_client_timeouts_total",
                                       "Requests too slow to arrive (408) and responses not read (closed), by kind.",
                                       {"kind"})) {}

}  // namespace llms
