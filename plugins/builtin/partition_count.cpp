// Built-in goal plugin PARTITION_COUNT: the SDK's distribution goal for partition_count.
#include <exception>

#include "goals/builtin_goals.hpp"
#include "plugins/goal_plugin_abi.hpp"

MOONMQ_DEFINE_GOAL_PLUGIN("PARTITION_COUNT", "1.0.0",
                          moonmq::goals::make_distribution_goal(moonmq::goals::resource::partition_count))
