#include "actors/system.hpp"

#include <algorithm>
#include <thread>

#include <caf/all.hpp>

#include "actors/actor_info.hpp"

namespace moonmq {

void register_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<actor_info>("moonmq::actor_info");
  cfg.add_message_type<std::vector<actor_info>>("std::vector<moonmq::actor_info>");
}

std::unique_ptr<caf::actor_system_config> make_system_config(const config::scheduler_config& sched) {
  auto cfg = std::make_unique<caf::actor_system_config>();
  size_t threads = sched.max_threads > 0 ? static_cast<size_t>(sched.max_threads)
                                         : std::max<size_t>(2, std::thread::hardware_concurrency());
  cfg->set("scheduler.max-threads", threads);
  cfg->set("scheduler.policy", sched.policy == "stealing" ? caf::atom("stealing") : caf::atom("sharing"));
  register_message_types(*cfg);
  return cfg;
}

}  // namespace moonmq
