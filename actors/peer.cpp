#include "actors/peer.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "util/clock.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

namespace moonmq {
namespace {

struct peer_state {
  transport::cluster_peer peer;
  std::chrono::milliseconds timeout{5000};
  std::chrono::milliseconds interval{5000};
  bool alive = false;
  bool probed = false;
  int64_t last_ok_ms = 0;
  std::string last_error;
  double probe_ms = 0;
  uint64_t probes = 0, failures = 0;
  /// The metadata image: a peer it names removed has no moonmq_peer_up
  /// series (null: always published).
  std::shared_ptr<const owner_view> image;
  static inline const char* name = "peer";
};

using self_ptr = peer_actor::stateful_pointer<peer_state>;

bool removed_from_cluster(const peer_state& st) {
  return st.image && st.image->standing()->removed.count(st.peer.id) != 0;
}

/// Sets moonmq_peer_up{peer}, or removes it once the metadata log removed
/// the peer from the cluster (its series goes with it). Only this actor
/// writes or removes its series (at exit too: see peer_fn), each under the
/// registry's lock.
void publish_up(const peer_state& st, bool up) {
  auto& reg = metrics::registry::global();
  metrics::labels l{{"peer", st.peer.id}};
  if (removed_from_cluster(st)) {
    reg.remove(peer_up_metric, l);
    return;
  }
  reg.set_gauge(peer_up_metric, "1 when the peer answered its last probe", l, up ? 1.0 : 0.0);
}

peer_actor::behavior_type peer_fn(self_ptr self, transport::cluster_peer peer, std::chrono::milliseconds timeout,
                                  std::chrono::milliseconds interval, std::shared_ptr<const owner_view> image) {
  auto& init = self->state;
  init.peer = std::move(peer);
  init.timeout = timeout;
  init.interval = interval;
  init.image = std::move(image);
  publish_up(init, false);
  // Stopped because the log removed the peer: its last probe must not stay
  // reported (a probe answered before the removal was seen may have set it).
  // A peer stopped for a new address keeps its series for the next actor.
  // The functor runs after the state is gone: it holds its own copies.
  self->attach_functor([id = init.peer.id, image = init.image](const caf::error&) {
    if (image && image->standing()->removed.count(id))
      metrics::registry::global().remove(peer_up_metric, {{"peer", id}});
  });
  self->send(self, tick_atom::value);
  return {
    [self](tick_atom) {
      auto& st = self->state;
      auto handle = caf::actor_cast<peer_actor>(self);
      auto t0 = std::chrono::steady_clock::now();
      transport::call_peer(st.peer, "GET", "/cluster/health", {}, 0, {}, st.timeout,
                           [handle, t0](int status, nlohmann::json, std::string error) {
                             auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::steady_clock::now() - t0)
                                         .count();
                             caf::anon_send(handle, step_atom::value, static_cast<int32_t>(status),
                                            static_cast<int64_t>(us), std::move(error));
                           });
    },
    [self](step_atom, int32_t status, int64_t us, std::string& error) {
      auto& st = self->state;
      bool ok = status == 200;
      ++st.probes;
      st.probe_ms = static_cast<double>(us) / 1000.0;
      if (ok) {
        st.last_ok_ms = util::wall_ms();
      } else {
        ++st.failures;
        st.last_error = error.empty() ? "HTTP " + std::to_string(status) : error;
      }
      if (ok != st.alive || !st.probed) {
        if (ok)
          log::get("node")->info("peer.up peer={} address={}", st.peer.id, st.peer.address);
        else
          log::get("node")->warn("peer.down peer={} address={} error=\"{}\"", st.peer.id, st.peer.address,
                                 st.last_error);
      }
      st.alive = ok;
      st.probed = true;
      publish_up(st, ok);
      self->delayed_send(self, st.interval, tick_atom::value);
    },
    [self](status_atom) {
      auto& st = self->state;
      nlohmann::json j{{"id", st.peer.id},
                       {"address", st.peer.address},
                       {"client_address", st.peer.client_address},
                       {"alive", st.alive},
                       {"last_ok_ms", st.last_ok_ms},
                       {"probe_ms", st.probe_ms},
                       {"probes", st.probes},
                       {"probe_failures", st.failures},
                       {"open_connections", st.peer.client->open_connections()},
                       {"connections_opened", st.peer.client->connections_opened()}};
      if (!st.last_error.empty())
        j["last_error"] = st.last_error;
      return j.dump();
    },
  };
}

}  // namespace

peer_actor spawn_peer(caf::actor_system& sys, transport::cluster_peer peer, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds probe_interval, registry_actor reg,
                      std::shared_ptr<const owner_view> image) {
  auto id = peer.id;
  auto a = sys.spawn(peer_fn, std::move(peer), timeout, probe_interval, std::move(image));
  enroll(reg, caf::actor_cast<caf::actor>(a), "peer-" + id, "peer");
  return a;
}

}  // namespace moonmq
