// The pool of I/O workers and the partition actors that forward to them
// (actors/partition.hpp). The workers themselves are actors/io_worker.cpp
// and actors/io_worker_rounds.cpp.

#include "actors/partition.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>

#include "actors/io_worker_impl.hpp"

namespace moonmq {
using namespace io_worker_detail;

class io_pool {
 public:
  std::vector<caf::actor> workers;
  std::atomic<uint64_t> next_id{1};

  ~io_pool() {
    for (auto& w : workers)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  }

  const caf::actor& pick(const std::string& topic, int32_t partition) const {
    auto h = std::hash<std::string>{}(topic) * 31 + static_cast<size_t>(partition);
    return workers[h % workers.size()];
  }
};

namespace {

struct partition_fwd_state {
  std::shared_ptr<io_pool> pool;  // declared first: released last
  caf::actor worker;
  uint64_t id = 0;
  caf::actor_addr self;  ///< this actor's key in the route table (append_direct)
  static inline const char* name = "partition";

  ~partition_fwd_state() {
    if (self)
      detail::remove_route(self);
    if (worker)
      caf::anon_send(worker, close_atom::value, id);
  }
};

using fwd_ptr = partition_actor::stateful_pointer<partition_fwd_state>;

/// Forwards a request to the worker with the partition's id after the tag;
/// the worker answers the original requester.
template <class... Rs, class Atom, class... Ts>
caf::delegated<Rs...> forward(fwd_ptr self, Atom tag, Ts&&... xs) {
  self->delegate(self->state.worker, tag, self->state.id, std::forward<Ts>(xs)...);
  return {};
}

partition_actor::behavior_type partition_fn(fwd_ptr self, std::shared_ptr<io_pool> pool, caf::actor worker,
                                            uint64_t id) {
  self->state.pool = std::move(pool);
  self->state.worker = std::move(worker);
  self->state.id = id;
  self->state.self = self->address();
  return {
    [self](append_atom a, std::string& batch, bool durable) {
      return forward<int64_t>(self, a, std::move(batch), durable);
    },
    [self](copy_atom a, std::string& batches, bool durable) {
      return forward<int64_t>(self, a, std::move(batches), durable);
    },
    [self](copy_atom a, int64_t expected, std::string& batches, bool durable) {
      return forward<int64_t>(self, a, expected, std::move(batches), durable);
    },
    [self](reset_atom a, int64_t start) { return forward<int64_t>(self, a, start); },
    [self](seal_atom a, bool sealed) { return forward<int64_t>(self, a, sealed, false); },
    [self](seal_atom a, bool sealed, bool durable) { return forward<int64_t>(self, a, sealed, durable); },
    [self](read_atom a, int64_t from, int32_t max_bytes) {
      return forward<std::string, int64_t, int64_t>(self, a, from, max_bytes, true);
    },
    [self](read_atom a, int64_t from, int32_t max_bytes, bool fetch) {
      return forward<std::string, int64_t, int64_t>(self, a, from, max_bytes, fetch);
    },
    [self](read_atom a, int64_t from, int32_t max_bytes, bool fetch, bool committed) {
      return forward<std::string, int64_t, int64_t, int64_t, std::vector<int64_t>>(self, a, from, max_bytes, fetch,
                                                                                   committed);
    },
    [self](lso_atom a) { return forward<int64_t, int64_t, int64_t>(self, a); },
    [self](marker_atom a, int64_t producer_id, int16_t producer_epoch, bool commit, int32_t coordinator_epoch) {
      return forward<int64_t>(self, a, producer_id, producer_epoch, commit, coordinator_epoch);
    },
    [self](bounds_atom a) { return forward<int64_t, int64_t, int64_t>(self, a); },
    [self](time_lookup_atom a, int64_t timestamp, bool committed) {
      return forward<int64_t, int64_t>(self, a, timestamp, committed);
    },
    [self](delete_atom a) {
      auto out = forward<bool>(self, a);
      // The worker forgot the partition with the delete; nothing to close.
      self->state.worker = nullptr;
      self->quit();
      return out;
    },
    [self](repair_atom a) { return forward<std::string>(self, a); },
    [self](delete_records_atom a, int64_t before, bool sealed_ok) {
      return forward<int64_t>(self, a, before, sealed_ok);
    },
    [self](config_atom a, int64_t segment_bytes, int64_t retention_bytes, int64_t retention_ms) {
      return forward<bool>(self, a, segment_bytes, retention_bytes, retention_ms);
    },
    [self](status_atom a) { return forward<std::string>(self, a); },
  };
}

/// Half the RLIMIT_NOFILE soft limit: the rest is left to sockets, the
/// Raft store, group offsets and sealed segments opened per read.
int64_t default_open_files() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
    return 4096;
  return std::max<int64_t>(64, static_cast<int64_t>(lim.rlim_cur) / 2);
}

}  // namespace

std::shared_ptr<io_pool> spawn_io_pool(caf::actor_system& sys, io_settings settings, const registry_actor* reg) {
  auto pool = std::make_shared<io_pool>();
  auto deleter = std::make_shared<storage::file_deleter>();
  const int threads = std::max(1, settings.threads);
  const int64_t files = settings.max_open_files > 0 ? settings.max_open_files : default_open_files();
  const auto per_worker = static_cast<size_t>(std::max<int64_t>(1, files / threads));
  // What an earlier run's WAL holds goes into the partition logs before any
  // of them opens (a WAL turned off since is still replayed).
  if (!settings.data_dir.empty())
    (void)storage::replay_wal(settings.data_dir);
  for (int i = 0; i < threads; ++i) {
    auto w = sys.spawn<caf::detached>(worker_fn, i, per_worker, deleter, settings);
    if (reg && *reg)
      enroll(*reg, w, "io-worker " + std::to_string(i), "io_worker");
    pool->workers.push_back(std::move(w));
  }
  return pool;
}

partition_actor spawn_partition(caf::actor_system& sys, const std::shared_ptr<io_pool>& pool,
                                partition_settings settings) {
  const auto& worker = pool->pick(settings.topic, settings.partition);
  const auto id = pool->next_id.fetch_add(1);
  // Sent before the partition actor exists, so it is the worker's first
  // message about this partition.
  opening_gauge().add(1.0);
  caf::anon_send(worker, open_atom::value, id, std::move(settings));
  auto actor = sys.spawn(partition_fn, pool, worker, id);
  detail::add_route(actor.address(), detail::partition_route{worker, id});
  return actor;
}

}  // namespace moonmq
