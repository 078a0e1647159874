// The HTTP server's own metrics, registered beside the engine's in one Registry so
// that GET /metrics renders both (docs/metrics.md lists every name).
//
// Thread-safety: metrics are atomics; update from any thread.
#pragma once

#include <string_view>

#include "metrics/metrics.h"

namespace llms {

// The method label of a request: one of HTTP's standard methods (RFC 9110, PATCH),
// "-" when there was no request line (a transport error), else "other" — so that a
// client inventing methods cannot add series.
std::string_view method_label(std::string_view method);

struct HttpMetrics {
  explicit HttpMetrics(Registry& r);

  Family<Counter>& http_requests;      // by endpoint (a route or "other"), method (method_label), status, version
  Family<Histogram>& http_duration;    // by endpoint
  Gauge& open_connections;
  Gauge& active_requests;              // generation requests being answered
  Counter& client_disconnects;         // generation requests cancelled because the client left
  Counter& streamed_chunks;            // SSE data events written
  Family<Counter>& refused_connections;  // by reason: max_connections, max_connections_per_client
  Family<Counter>& client_timeouts;      // by kind: header, body, stream_stall
};

}  // namespace llms
