// The HTTP server's own metrics, registered beside the engine's in one Registry so
// that GET /metrics renders both (docs/metrics.md lists every name).
//
// Thread-safety: metrics are atomics; update from any thread.
#pragma once

#include "metrics/metrics.h"

namespace llms {

struct HttpMetrics {
  explicit HttpMetrics(Registry& r);

  Family<Counter>& http_requests;      // by endpoint, method, status
  Family<Histogram>& http_duration;    // by endpoint
  Gauge& open_connections;
  Gauge& active_requests;              // generation requests being answered
  Counter& client_disconnects;         // generation requests cancelled because the client left
  Counter& streamed_chunks;            // SSE data events written
  Family<Counter>& refused_connections;  // by reason: max_connections, max_connections_per_client
  Family<Counter>& client_timeouts;      // by kind: header, body, stream_stall
};

}  // namespace llms
