// Built-in goal plugin SLOW_BROKER: the SDK's slow broker goal.
#include <exception>

#include "goals/builtin_goals.hpp"
#include "plugins/goal_plugin_abi.hpp"

MOONMQ_DEFINE_GOAL_PLUGIN("SLOW_BROKER", "1.0.0", moonmq::goals::make_slow_broker_goal())
