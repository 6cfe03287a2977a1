#include "peers/peer_directory.hpp"

#include <algorithm>


namespace moonmq::transport {

peer_directory::peer_directory(std::vector<cluster_peer> configured, connector connect, std::string token)
    : configured_(std::move(configured)), connect_(std::move(connect)), token_(std::move(token)) {}

std::vector<cluster_peer> peer_directory::all() const {
  std::lock_guard<std::mutex> g{mtx_};
  std::vector<cluster_peer> out = configured_;
  for (const auto& [id, p] : learned_)
    out.push_back(p);
  return out;
}

std::optional<cluster_peer> peer_directory::find(const std::string& id) const {
  std::lock_guard<std::mutex> g{mtx_};
  for (const auto& p : configured_)
    if (p.id == id)
      return p;
  if (auto it = learned_.find(id); it != learned_.end())
    return it->second;
  return std::nullopt;
}

bool peer_directory::empty() const { return size() == 0; }

std::size_t peer_directory::size() const {
  std::lock_guard<std::mutex> g{mtx_};
  return configured_.size() + learned_.size();
}

std::vector<std::string> peer_directory::learn(const std::string& self,
                                               const std::map<std::string, cluster::broker_endpoints>& registered) {
  std::vector<std::string> added;
  std::lock_guard<std::mutex> g{mtx_};
  for (const auto& [id, e] : registered) {
    if (id == self)
      continue;
    // A configured peer (a voter) keeps its configured addresses.
    if (std::any_of(configured_.begin(), configured_.end(), [&](const auto& p) { return p.id == id; }))
      continue;
    auto it = learned_.find(id);
    if (it != learned_.end() && it->second.address == e.cluster) {
      it->second.client_address = e.client;
      it->second.kafka_address = e.kafka;
      continue;
    }
    if (adopt(cluster_peer{id, e.cluster, e.client, token_, nullptr, e.kafka}).client)
      added.push_back(id);
  }
  for (auto it = learned_.begin(); it != learned_.end();) {
    if (registered.count(it->first)) {
      ++it;
      continue;
    }
    retired_.push_back(it->second.client);
    it = learned_.erase(it);
  }
  return added;
}

cluster_peer peer_directory::connect(const std::string& id, const std::string& address) {
  std::lock_guard<std::mutex> g{mtx_};
  return adopt(cluster_peer{id, address, {}, token_, nullptr, {}});
}

cluster_peer peer_directory::adopt(cluster_peer p) {
  p.client = connect_ && !closed_ ? connect_(p.id, p.address) : nullptr;
  if (!p.client)
    return p;
  if (auto it = learned_.find(p.id); it != learned_.end())
    retired_.push_back(it->second.client);
  learned_[p.id] = p;
  return p;
}

void peer_directory::close() {
  std::vector<std::shared_ptr<peer_link>> clients;
  {
    std::lock_guard<std::mutex> g{mtx_};
    closed_ = true;  // no client is made after this
    for (auto& p : configured_)
      clients.push_back(p.client);
    for (auto& [id, p] : learned_)
      clients.push_back(p.client);
    clients.insert(clients.end(), retired_.begin(), retired_.end());
  }
  for (auto& c : clients)
    if (c)
      c->close();
}

}  // namespace moonmq::transport
