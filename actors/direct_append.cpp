#include "actors/direct_append.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include <caf/all.hpp>

#include "actors/ask.hpp"
#include "actors/direct_append_impl.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace detail {

direct_reply::direct_reply(std::function<void(int64_t)> ok, std::function<void(const caf::error&)> fail)
    : ok_(std::move(ok)), fail_(std::move(fail)) {}

namespace {

/// Runs a callback on an I/O worker's thread (or in a destructor): an
/// exception from it must not leave the worker's round half done, so it is
/// logged and dropped.
template <class F, class... Ts>
void call_quietly(const F& fn, Ts&&... xs) noexcept {
  if (!fn)
    return;
  try {
    fn(std::forward<Ts>(xs)...);
  } catch (const std::exception& e) {
    log::get("broker")->error("append.callback_failed error=\"{}\"", e.what());
  } catch (...) {
    log::get("broker")->error("append.callback_failed error=unknown");
  }
}

}  // namespace

direct_reply::~direct_reply() {
  if (!answered_)
    call_quietly(fail_, caf::make_error(caf::sec::request_receiver_down));
}

void direct_reply::deliver(int64_t base) {
  answered_ = true;
  call_quietly(ok_, base);
}

void direct_reply::deliver(const caf::error& failure) {
  answered_ = true;
  call_quietly(fail_, failure);
}

namespace {

/// Partition actor → its route. Keyed by the actor's control block, not by
/// actor_addr equality: CAF 0.17 compares two addresses by actor id and node
/// id, and every actor system of one process has the same node id, so with
/// several systems in a process (brokers run in one test process through
/// node/node_runtime.hpp) two partition actors with the same id would share
/// a route and one broker's produce would land in another's log. Each entry
/// keeps its address, so its control block stays allocated (and its key
/// unique) while the entry exists.
class route_table {
 public:
  void add(const caf::actor_addr& a, partition_route r) {
    std::lock_guard<std::mutex> g{mtx_};
    routes_[key(a)] = entry{a, std::move(r)};
  }
  void remove(const caf::actor_addr& a) {
    std::lock_guard<std::mutex> g{mtx_};
    routes_.erase(key(a));
  }
  /// The route of each partition (nullopt: none), under one lock; `dest`
  /// picks the partition actor out of an element.
  template <class T, class F>
  std::vector<std::optional<partition_route>> find(const std::vector<T>& items, F dest) const {
    std::vector<std::optional<partition_route>> out;
    out.reserve(items.size());
    std::lock_guard<std::mutex> g{mtx_};
    for (const auto& item : items) {
      const partition_actor& a = dest(item);
      auto it = a ? routes_.find(caf::actor_cast<caf::actor_control_block*>(a)) : routes_.end();
      out.push_back(it == routes_.end() ? std::nullopt : std::optional<partition_route>{it->second.route});
    }
    return out;
  }

 private:
  struct entry {
    caf::actor_addr keep;  ///< holds the control block while the route exists
    partition_route route;
  };
  static const caf::actor_control_block* key(const caf::actor_addr& a) {
    return caf::actor_cast<caf::actor_control_block*>(a);
  }
  mutable std::mutex mtx_;
  std::unordered_map<const caf::actor_control_block*, entry> routes_;
};

/// Never destroyed: partition actors of any actor system in the process may
/// still leave it during static destruction.
route_table& routes() {
  static auto* table = new route_table;
  return *table;
}

}  // namespace

void add_route(const caf::actor_addr& partition, partition_route route) { routes().add(partition, std::move(route)); }

void remove_route(const caf::actor_addr& partition) { routes().remove(partition); }

}  // namespace detail

namespace {

/// The group of `worker` in `groups`, made when new. A handful of workers:
/// a linear search, which keeps the first-seen order.
template <class Group>
Group& group_of(std::vector<std::pair<caf::actor, std::shared_ptr<Group>>>& groups, const caf::actor& worker) {
  auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return e.first == worker; });
  if (g != groups.end())
    return *g->second;
  groups.emplace_back(worker, std::make_shared<Group>());
  return *groups.back().second;
}

}  // namespace

void append_direct(caf::actor_system& sys, std::vector<direct_append> appends, std::chrono::milliseconds timeout) {
  auto found = detail::routes().find(appends, [](const direct_append& a) -> const partition_actor& { return a.dest; });
  std::vector<std::pair<caf::actor, std::shared_ptr<detail::direct_group>>> groups;
  for (size_t i = 0; i < appends.size(); ++i) {
    auto& a = appends[i];
    if (!a.dest) {
      detail::direct_reply{std::move(a.ok), std::move(a.fail)}.deliver(caf::make_error(caf::sec::invalid_argument));
      continue;
    }
    if (!found[i]) {
      // Answered through a reply as well: guarded callbacks, exactly one.
      auto reply = std::make_shared<detail::direct_reply>(std::move(a.ok), std::move(a.fail));
      ask<int64_t>(
        sys, a.dest, timeout, [reply](int64_t& base) { reply->deliver(base); },
        [reply](const caf::error& e) { reply->deliver(e); }, append_atom::value, std::move(a.batch), a.durable);
      continue;
    }
    group_of(groups, found[i]->worker).items.push_back(detail::direct_item{
      found[i]->id, std::move(a.batch), a.durable, a.check,
      std::make_unique<detail::direct_reply>(std::move(a.ok), std::move(a.fail))});
  }
  for (auto& [worker, group] : groups)
    caf::anon_send(worker, append_atom::value, std::move(group));
}

void read_loads(caf::actor_system& sys, const std::vector<partition_actor>& partitions,
                std::chrono::milliseconds timeout, std::function<void(std::vector<partition_load>&)> done) {
  auto loads = std::make_shared<std::vector<partition_load>>(partitions.size());
  auto found = detail::routes().find(partitions, [](const partition_actor& a) -> const partition_actor& { return a; });
  std::vector<std::pair<caf::actor, std::shared_ptr<detail::loads_group>>> groups;
  for (size_t i = 0; i < partitions.size(); ++i) {
    if (!found[i]) {
      (*loads)[i].error = "the partition stopped";
      continue;
    }
    group_of(groups, found[i]->worker).items.emplace_back(i, found[i]->id);
  }
  if (groups.empty()) {
    detail::call_quietly(done, *loads);
    return;
  }
  // One short-lived actor asks each worker once and answers on its own
  // thread; a worker that does not answer within `timeout` leaves an error
  // on its partitions (the group it may still fill is never read again).
  sys.spawn([loads, groups = std::move(groups), timeout, done = std::move(done)](caf::event_based_actor* self) {
    auto left = std::make_shared<size_t>(groups.size());
    auto finish = [self, loads, left, done] {
      if (--*left != 0)
        return;
      detail::call_quietly(done, *loads);
      self->quit();
    };
    for (const auto& [worker, group] : groups) {
      self->request(worker, timeout, loads_atom::value, group)
        .then(
          [loads, finish](std::shared_ptr<detail::loads_group>& answered) {
            for (size_t k = 0; k < answered->items.size() && k < answered->loads.size(); ++k)
              (*loads)[answered->items[k].first] = std::move(answered->loads[k]);
            finish();
          },
          [loads, finish, items = group->items](caf::error& e) {
            auto why = "the I/O worker did not answer: " + caf::to_string(e);
            for (const auto& item : items)
              (*loads)[item.first].error = why;
            finish();
          });
    }
  });
}

}  // namespace moonmq
