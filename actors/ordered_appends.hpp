#pragma once
// Appends sent to partitions in the order they are handed over.
//
// CAF keeps the order of the messages one sender sends to one receiver,
// and nothing more: appends sent through separate ask helpers (actors/
// ask.hpp, one short-lived actor each) may reach a partition in any order.
// A Kafka connection whose produce requests are handled concurrently
// (pipelining, docs/kafka.md) needs the appends of request N to reach each
// partition before those of request N+1, as Kafka's per-connection order
// promises (and idempotent producers' sequence numbers expect). So they go
// through one dispatcher actor: it sends each append as it receives it, so
// two appends handed over one after the other (by one Asio strand's
// handlers, which never overlap) reach their partition in that order, and
// the partition actor keeps it on the way to its log. Once the dispatcher
// stopped (its broker exited), an append fails at once with
// sec::request_receiver_down instead of never being answered.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/partition.hpp"

namespace moonmq {

class ordered_appends {
 public:
  /// Spawns the dispatcher; it stops when `lifetime` (the broker) exits.
  ordered_appends(caf::actor_system& sys, const caf::actor& lifetime);
  ~ordered_appends();
  ordered_appends(const ordered_appends&) = delete;
  ordered_appends& operator=(const ordered_appends&) = delete;

  /// Sends (append_atom, batch, durable) to `dest` after every append
  /// handed over before it, and calls `ok(base offset)` or
  /// `fail(error)` (timeout: sec::request_timeout) on a CAF thread.
  void append(const partition_actor& dest, std::chrono::milliseconds timeout, std::string batch, bool durable,
              std::function<void(int64_t)> ok, std::function<void(const caf::error&)> fail) const;

 private:
  // Declared first: the dispatcher is spawned with it.
  std::shared_ptr<std::atomic<bool>> stopped_ = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<caf::actor> dispatcher_;
};

}  // namespace moonmq
