#pragma once
// GET /session/recommend on the client API (CONTRACT §3, docs/client-api.md):
// which broker a client should pin its session to. The route checks the
// query (`clientId` required, `topic` optional), names the owner of each of
// the topic's partitions from the local catalogue and ownership table, and
// asks the load_meter actor, which ranks the brokers (docs/placement.md).
//
// Also: client_id_of, how every client route reads the client id of a
// request (the `clientId` query parameter, else the `X-Client-Id` header).

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/load_meter.hpp"
#include "net/router.hpp"

namespace moonmq::transport {

struct session_context {
  caf::actor_system* system = nullptr;
  load_meter_actor meter;
  std::shared_ptr<catalog_view> catalog;
  std::shared_ptr<owner_view> owners;  ///< null = single broker: every partition is local
  std::string broker_id;
  std::chrono::milliseconds timeout{5000};
};

void add_session_routes(router& r, const session_context& ctx);

/// The request's client id: `?clientId=` when present, else the
/// `X-Client-Id` header; "" when neither. `error` is set (and "" returned)
/// when one is present but not a valid client id (1..256 bytes, no control
/// characters): "clientId: ..." naming the parameter.
std::string client_id_of(const http_request& req, std::string& error);

}  // namespace moonmq::transport
