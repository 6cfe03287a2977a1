#pragma once
// The composition root: one broker assembled from its configuration. Opens
// the data directory's state (topic catalogue, Raft store, move journal),
// spawns every long-lived actor, hands each listener's routes what they
// ask, binds the listeners and, once told to stop, shuts everything down in
// order (listeners, peer links, actors). moonmq-node (tools/moonmq-node) is
// this plus the command line and the signals; tests run brokers in one
// process through it (tests/node/node_runtime.test.cpp).

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "config/loader.hpp"
#include "peers/peer_link.hpp"

namespace moonmq {

/// What the embedding program supplies around a node's run.
struct node_hooks {
  /// Called once, after every listener is bound and the node is serving,
  /// with the listeners' bound addresses (name → "host:port"; names admin,
  /// client, and cluster / kafka when enabled). Optional.
  std::function<void(const std::map<std::string, std::string>& listeners)> ready;
  /// Blocks until the node should stop and names why (logged as
  /// `node.signal signal=<reason>`). Required.
  std::function<std::string()> wait_for_stop;
  /// Wraps every link this node makes to a peer broker `peer` (its cluster
  /// calls and its Raft messages) around the HTTP client it made: tests put
  /// a faulty network between brokers running in one process
  /// (tests/node/lossy_network.hpp). Optional: absent, the HTTP client is
  /// used as it is.
  std::function<std::shared_ptr<transport::peer_link>(const std::string& peer,
                                                      std::shared_ptr<transport::peer_link> link)>
    wrap_peer_link;
};

/// Runs the broker `loaded` describes until `hooks.wait_for_stop` returns,
/// then stops it: listeners stop accepting (client 3 s, cluster and admin
/// 1 s for requests in flight), peer links close, every actor exits.
/// Returns 0 after that clean shutdown, 1 when the node could not start (an
/// unwritable data dir, a corrupt Raft store, a listener that cannot bind;
/// logged as `node.<what>_failed` and printed to stderr). Several nodes may
/// run in one process, each on its own thread (they share the process's
/// metrics registry and, in shared-storage mode, its lease gate).
int run_node(const config::load_result& loaded, const node_hooks& hooks);

}  // namespace moonmq
