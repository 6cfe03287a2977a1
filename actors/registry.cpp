#include "actors/registry.hpp"

#include <chrono>
#include <map>
#include <memory>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "util/clock.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

struct entry {
  caf::actor handle;
  actor_info info;
};

struct registry_state {
  std::map<uint64_t, entry> entries;
  std::chrono::milliseconds status_timeout{500};
  static inline const char* name = "registry";
};

using self_ptr = registry_actor::stateful_pointer<registry_state>;

/// Collects status answers for a list request and delivers when the last
/// one arrives (answer or timeout).
struct gather {
  caf::typed_response_promise<std::vector<actor_info>> promise;
  std::vector<actor_info> infos;
  size_t pending = 0;
  void done_one() {
    if (--pending == 0)
      promise.deliver(std::move(infos));
  }
};

std::string own_status(self_ptr self) {
  std::map<std::string, int> kinds;
  for (auto& [id, e] : self->state.entries)
    ++kinds[e.info.kind];
  nlohmann::json j{{"actors", self->state.entries.size()}, {"by_kind", kinds},
                   {"status_timeout_ms", self->state.status_timeout.count()}};
  return j.dump();
}

/// Asks one actor for its status and stores the answer in `info`.
template <class OnDone>
void ask_status(self_ptr self, const entry& e, actor_info* info, OnDone done) {
  if (e.handle.id() == self->id()) {
    info->responsive = true;
    info->state = own_status(self);
    done();
    return;
  }
  self->request(e.handle, self->state.status_timeout, status_atom::value)
    .then(
      [info, done](std::string& state) {
        info->responsive = true;
        info->state = std::move(state);
        done();
      },
      [info, done](caf::error&) {
        info->responsive = false;
        info->state.clear();
        done();
      });
}

registry_actor::behavior_type registry_fn(self_ptr self, std::chrono::milliseconds status_timeout) {
  self->state.status_timeout = status_timeout;
  self->set_down_handler([self](caf::down_msg& dm) {
    auto it = self->state.entries.find(dm.source.id());
    if (it != self->state.entries.end()) {
      log::get("node")->debug("registry.left id={} name={} kind={}", it->first, it->second.info.name,
                              it->second.info.kind);
      self->state.entries.erase(it);
    }
  });
  return {
    [self](enroll_atom, caf::actor& who, std::string& name, std::string& kind) {
      if (!who)
        return;
      auto id = who.id();
      if (self->state.entries.count(id))
        return;
      if (id != self->id())
        self->monitor(who);
      actor_info info;
      info.id = id;
      info.name = std::move(name);
      info.kind = std::move(kind);
      info.spawned_at = util::wall_ms();
      self->state.entries.emplace(id, entry{std::move(who), std::move(info)});
    },
    [self](list_atom) -> caf::result<std::vector<actor_info>> {
      auto g = std::make_shared<gather>();
      g->promise = self->make_response_promise<std::vector<actor_info>>();
      g->infos.reserve(self->state.entries.size());
      for (auto& [id, e] : self->state.entries)
        g->infos.push_back(e.info);
      g->pending = g->infos.size();
      if (g->pending == 0) {
        g->promise.deliver(std::vector<actor_info>{});
        return g->promise;
      }
      size_t i = 0;
      for (auto& [id, e] : self->state.entries)
        ask_status(self, e, &g->infos[i++], [g] { g->done_one(); });
      return g->promise;
    },
    [self](inspect_atom, uint64_t id) -> caf::result<actor_info> {
      auto it = self->state.entries.find(id);
      if (it == self->state.entries.end())
        return make_error(errc::unknown_actor, "no actor with id " + std::to_string(id));
      struct pending {
        caf::typed_response_promise<actor_info> promise;
        actor_info info;
      };
      auto p = std::make_shared<pending>(pending{self->make_response_promise<actor_info>(), it->second.info});
      ask_status(self, it->second, &p->info, [p] { p->promise.deliver(std::move(p->info)); });
      return p->promise;
    },
    [self](status_atom) { return own_status(self); },
  };
}

}  // namespace

registry_actor spawn_registry(caf::actor_system& sys, std::chrono::milliseconds status_timeout) {
  auto reg = sys.spawn(registry_fn, status_timeout);
  enroll(reg, caf::actor_cast<caf::actor>(reg), "registry", "registry");
  return reg;
}

void enroll(const registry_actor& reg, const caf::actor& who, std::string name, std::string kind) {
  caf::anon_send(reg, enroll_atom::value, who, std::move(name), std::move(kind));
}

}  // namespace moonmq
