#pragma once
// Building the CAF actor_system configuration of a node: scheduler policy and
// thread count from config, and every message type registered once.

#include <memory>

#include <caf/fwd.hpp>

#include "config/node_config.hpp"

namespace moonmq {

/// A ready actor_system_config for `sched`. Never reads caf-application.ini
/// (TOOLCHAIN.md, runtime trap 5). max_threads 0 = hardware threads, at
/// least 2.
std::unique_ptr<caf::actor_system_config> make_system_config(const config::scheduler_config& sched);

/// Registers moonmq's message types with `cfg` (call once per config).
void register_message_types(caf::actor_system_config& cfg);

}  // namespace moonmq
