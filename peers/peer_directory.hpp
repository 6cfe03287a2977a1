#pragma once
// The brokers this one talks to (docs/metadata.md "Joining"): the configured
// peers (Cluster.Peers, the voters' bootstrap) and every broker the metadata
// log registered since, each with its keep-alive client. One directory per
// broker, shared by every context that reaches peers; readers take a copy of
// the current list, so a broker that joins while a survey runs is asked from
// the next survey on.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster/types.hpp"
#include "peers/peer_survey.hpp"

namespace moonmq::transport {

class peer_directory {
 public:
  /// Makes the keep-alive client of a broker learned from the log (`id`,
  /// its cluster host:port); null when the address is unusable.
  using connector = std::function<std::shared_ptr<peer_link>(const std::string& id, const std::string& address)>;

  peer_directory() = default;
  peer_directory(std::vector<cluster_peer> configured, connector connect, std::string token);

  /// Every peer (configured first, in their order, then registered ones in
  /// id order), copied: safe to keep while the directory changes.
  std::vector<cluster_peer> all() const;
  /// The peer `id`, if known.
  std::optional<cluster_peer> find(const std::string& id) const;
  bool empty() const;
  std::size_t size() const;

  /// Takes in the registered brokers of an applied image (id → endpoints):
  /// a new one gets a client, one whose cluster address changed gets a new
  /// client (the old one is closed at close()), and `self` and configured
  /// peers (voters keep their configured addresses) are skipped. Brokers no
  /// longer in `registered` are dropped. After close() nothing is added.
  /// Returns the ids added.
  std::vector<std::string> learn(const std::string& self, const std::map<std::string, cluster::broker_endpoints>& registered);

  /// Makes a client for `id` at `address` through the connector and keeps
  /// the peer (replacing an earlier one of that id) until close(); the
  /// returned peer's client is null when the address is unusable.
  cluster_peer connect(const std::string& id, const std::string& address);

  /// Closes every client (configured and learned); at shutdown. No client is
  /// made afterwards (connect() answers a null client).
  void close();

 private:
  /// Under mtx_: gives `p` a client through the connector and keeps it in
  /// place of an earlier peer of its id (retired); `p` with a null client
  /// when the address is unusable or after close().
  cluster_peer adopt(cluster_peer p);

  mutable std::mutex mtx_;
  std::vector<cluster_peer> configured_;
  std::map<std::string, cluster_peer> learned_;
  std::vector<std::shared_ptr<peer_link>> retired_;  ///< replaced clients, closed at close()
  bool closed_ = false;
  connector connect_;
  std::string token_;
};

}  // namespace moonmq::transport
