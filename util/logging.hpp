#pragma once
// One named spdlog logger per component (node, broker, reassigner, balancer,
// raft, transport, plugins, storage, config). Messages are an event name plus
// key=value details: log::get("broker")->info("topic.created name={} partitions={}", n, p).

#include <memory>
#include <string>

#include <spdlog/logger.h>

namespace moonmq::log {

/// The logger for `component`, created on first use with the process-wide
/// level and sink (stderr, colour when a terminal). Thread-safe.
std::shared_ptr<spdlog::logger> get(const std::string& component);

/// Sets the level of every existing and future logger. `level` is one of
/// trace, debug, info, warn, error, critical, off; returns false otherwise.
bool set_level(const std::string& level);

}  // namespace moonmq::log
