#include "transport/cluster_admin_routes.hpp"

#include <atomic>
#include <mutex>

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "transport/http_client.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

struct probe_round {
  std::mutex mtx;
  json brokers = json::array();
  std::atomic<size_t> pending{0};
  std::function<void()> done;
  /// `done` captures the round itself; moving it out breaks that cycle.
  void finish_one() {
    if (--pending == 0) {
      auto finish = std::move(done);
      finish();
    }
  }
};

json partitions_json(const cluster_admin_context& ctx) {
  json list = json::array();
  auto topics = ctx.catalog->get();
  auto owners = ctx.owners ? ctx.owners->get() : std::make_shared<const owner_map>();
  for (const auto& [name, t] : *topics)
    for (size_t p = 0; p < t.partitions.size(); ++p) {
      auto it = owners->find(cluster::topic_partition{name, static_cast<int32_t>(p)});
      auto owner = it == owners->end() ? ctx.broker_id : it->second;
      list.push_back(json{{"topic", name}, {"partition", p}, {"owner", owner}, {"local", true}});
    }
  return list;
}

void answer(const cluster_admin_context& ctx, const responder& respond, json brokers) {
  auto partitions = partitions_json(ctx);
  if (!ctx.state) {
    respond(http_response::json(200, json{{"brokers", std::move(brokers)},
                                          {"partitions", std::move(partitions)},
                                          {"controller", {{"id", nullptr}, {"epoch", 0}}}}
                                       .dump()));
    return;
  }
  ask_many<int64_t, std::string>(
    *ctx.system, *ctx.state, std::chrono::seconds(5),
    [respond, brokers, partitions](int64_t& epoch, std::string& holder) {
      respond(http_response::json(
        200, json{{"brokers", brokers},
                  {"partitions", partitions},
                  {"controller", {{"id", holder.empty() ? json(nullptr) : json(holder)}, {"epoch", epoch}}}}
               .dump()));
    },
    [respond](const caf::error& e) {
      respond(http_response::error(http_status_of(e), error_code_of(e), "cluster state: " + caf::to_string(e)));
    },
    get_atom::value);
}

}  // namespace

void add_cluster_admin_routes(router& r, const cluster_admin_context& ctx) {
  r.add("GET", "/admin/cluster", [ctx](http_request&, responder respond) {
    auto round = std::make_shared<probe_round>();
    round->brokers.push_back(
      json{{"id", ctx.broker_id}, {"alive", true}, {"self", true}, {"client_address", ctx.client_address ? ctx.client_address() : std::string{}}});
    round->pending = ctx.peers.size() + 1;
    round->done = [ctx, respond, round] { answer(ctx, respond, round->brokers); };
    for (const auto& peer : ctx.peers) {
      http_client_request req;
      req.method = "GET";
      req.target = "/cluster/health";
      req.timeout = ctx.probe_timeout;
      req.idempotent = true;
      if (!peer.token.empty())
        req.headers.emplace_back("X-Cluster-Token", peer.token);
      peer.client->request(std::move(req), [round, peer](http_client_result res) {
        json b{{"id", peer.id}, {"alive", res.ok() && res.status == 200}, {"self", false},
               {"address", peer.address}, {"client_address", peer.client_address}};
        if (!res.ok())
          b["error"] = res.error_message;
        else if (res.status != 200)
          b["error"] = "HTTP " + std::to_string(res.status);
        {
          std::lock_guard<std::mutex> g{round->mtx};
          round->brokers.push_back(std::move(b));
        }
        round->finish_one();
      });
    }
    round->finish_one();
  });
}

}  // namespace moonmq::transport
