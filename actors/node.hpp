#pragma once
// The node actor: owns the node's start-up and shutdown. It spawns the
// node's long-lived actors, links to them (so that its exit stops them all),
// enrolls them with the registry, and reports the node's summary.

#include <map>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/registry.hpp"

namespace moonmq {

using node_actor = caf::typed_actor<
  // The node's summary (JSON text): broker id, version, uptime, listeners.
  caf::replies_to<status_atom>::with<std::string>,
  // Orderly shutdown: exits every child, then the node itself; replies once done.
  caf::replies_to<stop_atom>::with<bool>>;

/// What the node reports about itself.
struct node_settings {
  std::string broker_id;
  std::string data_dir;
  std::vector<std::string> config_files;
  std::map<std::string, std::string> listeners;  ///< name → "host:port"
};

/// Spawns the node actor, enrolls it with `reg` and links it to `children`
/// (the node's long-lived actors), so that stopping the node stops them all.
node_actor spawn_node(caf::actor_system& sys, node_settings settings, registry_actor reg,
                      std::vector<caf::actor> children = {});

}  // namespace moonmq
