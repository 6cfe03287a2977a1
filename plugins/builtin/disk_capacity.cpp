// Built-in goal plugin DISK_CAPACITY: the SDK's capacity goal for disk.
#include <exception>

#include "goals/builtin_goals.hpp"
#include "plugins/goal_plugin_abi.hpp"

MOONMQ_DEFINE_GOAL_PLUGIN("DISK_CAPACITY", "1.0.0",
                          moonmq::goals::make_capacity_goal(moonmq::goals::resource::disk))
