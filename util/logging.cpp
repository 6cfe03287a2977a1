#include "util/logging.hpp"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace moonmq::log {
namespace {
std::mutex mtx;
spdlog::level::level_enum current = spdlog::level::info;
}  // namespace

std::shared_ptr<spdlog::logger> get(const std::string& component) {
  std::lock_guard<std::mutex> guard{mtx};
  if (auto existing = spdlog::get(component))
    return existing;
  auto logger = spdlog::stderr_color_mt(component);
  logger->set_level(current);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  return logger;
}

bool set_level(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  // from_str maps unknown names to `off`; only accept "off" when asked for.
  if (parsed == spdlog::level::off && level != "off")
    return false;
  std::lock_guard<std::mutex> guard{mtx};
  current = parsed;
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(parsed); });
  return true;
}

}  // namespace moonmq::log
