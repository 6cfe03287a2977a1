// Built-in goal plugin TOPIC_SPREAD: the SDK's topic spread goal (off by default).
#include <exception>

#include "goals/builtin_goals.hpp"
#include "plugins/goal_plugin_abi.hpp"

MOONMQ_DEFINE_GOAL_PLUGIN("TOPIC_SPREAD", "1.0.0", moonmq::goals::make_topic_spread_goal())
