#pragma once
// The registry: every long-lived actor of the node enrolls when spawned; the
// registry monitors it and drops it when it exits (monitor, not trust). It
// answers the admin endpoint's /admin/actors by asking each actor for its
// status within a timeout; an actor that does not answer is listed as
// unresponsive, never dropped.

#include <chrono>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/actor_info.hpp"
#include "actors/atoms.hpp"

namespace moonmq {

using registry_actor = caf::typed_actor<
  // Enrolls `actor` under a name and kind; the registry monitors it.
  caf::reacts_to<enroll_atom, caf::actor, std::string, std::string>,
  // Every live actor with its status (unresponsive ones flagged).
  caf::replies_to<list_atom>::with<std::vector<actor_info>>,
  // One actor by id with its status; error `unknown_actor` if not enrolled.
  caf::replies_to<inspect_atom, uint64_t>::with<actor_info>,
  // The registry's own summary (JSON text).
  caf::replies_to<status_atom>::with<std::string>>;

/// Spawns the registry. `status_timeout` bounds each status request.
/// The registry enrolls itself.
registry_actor spawn_registry(caf::actor_system& sys, std::chrono::milliseconds status_timeout);

/// Enrolls `who` with `reg` (fire and forget).
void enroll(const registry_actor& reg, const caf::actor& who, std::string name, std::string kind);

}  // namespace moonmq
