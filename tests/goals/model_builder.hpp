#pragma once
// Small helpers to build cluster models in tests.

#include <string>

#include "goals/model.hpp"

namespace moonmq::test {

inline goals::broker_spec broker(std::string id, bool alive = true, bool excluded = false) {
  goals::broker_spec b;
  b.id = std::move(id);
  b.alive = alive;
  b.excluded = excluded;
  return b;
}

inline goals::replica_spec replica(std::string topic, int partition, std::string owner, double nw_in = 0.0,
                                   double nw_out = 0.0, double disk = 0.0) {
  goals::replica_spec r;
  r.topic = std::move(topic);
  r.partition = partition;
  r.owner = std::move(owner);
  r.load = {nw_in, nw_out, disk};
  return r;
}

}  // namespace moonmq::test
