#pragma once
// Internals of append_direct (actors/direct_append.hpp), shared by the I/O
// workers (actors/partition.cpp) and actors/direct_append.cpp. Include only
// from those two .cpp files.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>

#include "actors/direct_append.hpp"

namespace moonmq::detail {

/// The callbacks of one direct append. Exactly one is called: by deliver,
/// or, when the reply is destroyed unanswered (its message dropped by a
/// stopped worker, or a partition closed with the append waiting), fail
/// with sec::request_receiver_down.
class direct_reply {
 public:
  direct_reply(std::function<void(int64_t)> ok, std::function<void(const caf::error&)> fail);
  ~direct_reply();
  direct_reply(const direct_reply&) = delete;
  direct_reply& operator=(const direct_reply&) = delete;

  void deliver(int64_t base);
  void deliver(const caf::error& failure);

 private:
  std::function<void(int64_t)> ok_;
  std::function<void(const caf::error&)> fail_;
  bool answered_ = false;
};

/// One append of a direct group: the worker's id of the partition.
struct direct_item {
  uint64_t id = 0;
  std::string batch;
  bool durable = true;
  storage::batch_check check = storage::batch_check::full;
  std::unique_ptr<direct_reply> reply;
};

/// Every append of one append_direct call for one worker, in order.
struct direct_group {
  std::vector<direct_item> items;
};

/// The partitions of one read_loads call held by one worker: (index in the
/// call's answer, the worker's id of the partition), and their numbers,
/// filled by the worker (`loads[i]` for `items[i]`) and sent back.
struct loads_group {
  std::vector<std::pair<size_t, uint64_t>> items;
  std::vector<partition_load> loads;
};

/// Where a partition actor's requests go: its worker and its id there.
struct partition_route {
  caf::actor worker;
  uint64_t id = 0;
};

/// The process-wide table from partition actor to route: entered by
/// spawn_partition, removed when the partition actor exits (so a stopped
/// partition's handle finds no route).
void add_route(const caf::actor_addr& partition, partition_route route);
void remove_route(const caf::actor_addr& partition);

}  // namespace moonmq::detail

// Local messages only (handed over within one process).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<moonmq::detail::direct_group>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<moonmq::detail::loads_group>)
