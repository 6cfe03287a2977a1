#pragma once
// What each broker of the cluster last said about itself in its
// GET /cluster/loads answer (its rack, its weight and whether it reads
// placed topic entries), for the cluster state actor's placement of a new
// topic's partitions (docs/metadata.md "Placing a new topic's partitions").
// Written by the load_meter from every answer to its pulls of the peers'
// reports, and once at start for this broker; a broker that stops answering
// keeps what it last said, with the time it said it. Beside it, the brokers
// this broker's balance loop holds slow at its last pass (docs/balancer.md
// "Slow brokers"), which get no new partition either. Thread-safe; readers
// take a copy.

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace moonmq {

/// One broker's own account of itself.
struct announced_traits {
  std::string rack;             ///< Cluster.Rack ("" = none)
  double weight = 1.0;          ///< Cluster.Weight
  int32_t topic_placement = 0;  ///< cluster::topic_placement_version it reads (0 = an earlier version)
  /// When it was last heard (util::monotonic_ms); -1 = always current (this broker's own).
  int64_t heard_ms = -1;
};

class broker_traits_view {
 public:
  void set(const std::string& broker, announced_traits t) {
    std::lock_guard<std::mutex> g{mtx_};
    traits_[broker] = std::move(t);
  }
  std::map<std::string, announced_traits> get() const {
    std::lock_guard<std::mutex> g{mtx_};
    return traits_;
  }
  /// The brokers the balance loop's last pass holds slow (set by the
  /// balancer; empty while it runs no passes).
  void set_slow(std::set<std::string> ids) {
    std::lock_guard<std::mutex> g{mtx_};
    slow_ = std::move(ids);
  }
  std::set<std::string> slow() const {
    std::lock_guard<std::mutex> g{mtx_};
    return slow_;
  }

 private:
  mutable std::mutex mtx_;
  std::map<std::string, announced_traits> traits_;
  std::set<std::string> slow_;
};

}  // namespace moonmq
