// Built-in goal plugin NW_OUT_CAPACITY: the SDK's capacity goal for nw_out.
#include <exception>

#include "goals/builtin_goals.hpp"
#include "plugins/goal_plugin_abi.hpp"

MOONMQ_DEFINE_GOAL_PLUGIN("NW_OUT_CAPACITY", "1.0.0",
                          moonmq::goals::make_capacity_goal(moonmq::goals::resource::nw_out))
