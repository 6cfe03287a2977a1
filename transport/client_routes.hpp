#pragma once
// The client API (CONTRACT.md §3) as routes on the shared HTTP server:
// topics, records, consumer groups and committed offsets.
//
// Produce goes straight to the partition actors (the catalog view names
// them): the body is split per partition, each part encoded into one v2
// batch here, appended, and the offsets answered in request order. `?acks=`
// may be `leader` (default: answered once fsynced) or `none` (answered once
// appended).

#include <chrono>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/broker.hpp"
#include "actors/catalog_view.hpp"
#include "actors/group_coordinator.hpp"
#include "transport/router.hpp"

namespace moonmq::transport {

struct client_context {
  caf::actor_system* system = nullptr;
  broker_actor broker;
  group_actor groups;
  std::shared_ptr<catalog_view> catalog;
  /// Bound on each request to an actor (produce waits for an fsync).
  std::chrono::milliseconds timeout{10000};
  /// Largest fetch answer in bytes (whole batches; at least one batch).
  int32_t max_fetch_bytes = 4 * 1024 * 1024;
};

void add_client_routes(router& r, const client_context& ctx);

}  // namespace moonmq::transport
