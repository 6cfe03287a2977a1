// Built-in goal plugin DISK: the SDK's distribution goal for disk.
#include <exception>

#include "goals/builtin_goals.hpp"
#include "plugins/goal_plugin_abi.hpp"

MOONMQ_DEFINE_GOAL_PLUGIN("DISK", "1.0.0",
                          moonmq::goals::make_distribution_goal(moonmq::goals::resource::disk))
