#pragma once
// What the registry knows and reports about one live actor.

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace moonmq {

struct actor_info {
  uint64_t id = 0;          ///< CAF actor id, unique within the node
  std::string name;         ///< instance name, e.g. "partition orders-3"
  std::string kind;         ///< actor type: node, registry, broker, partition, ...
  int64_t spawned_at = 0;   ///< ms since the epoch when it joined the registry
  bool responsive = false;  ///< answered its status request within the timeout
  std::string state;        ///< the actor's own status summary, JSON text ("" if unresponsive)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, actor_info& x) {
  return f(caf::meta::type_name("moonmq::actor_info"), x.id, x.name, x.kind, x.spawned_at, x.responsive,
           x.state);
}

}  // namespace moonmq
