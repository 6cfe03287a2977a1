#include "plugins/goal_loader.hpp"

#include <algorithm>
#include <array>
#include <exception>

#include <boost/dll/shared_library.hpp>
#include <boost/filesystem.hpp>

#include "plugins/goal_plugin_abi.hpp"

namespace moonmq::plugins {
namespace {

namespace fs = boost::filesystem;

load_report single_error(const std::string& path, const std::string& message) {
  load_report r;
  r.errors.push_back({path, path + ": " + message});
  return r;
}

}  // namespace

load_report load_goal_file(const std::string& path) {
  auto lib = std::make_shared<boost::dll::shared_library>();
  boost::dll::fs::error_code ec;
  lib->load(boost::dll::fs::path(path), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec || !lib->is_loaded()) return single_error(path, "cannot load library: " + ec.message());
  if (!lib->has(kGoalPluginEntry))
    return single_error(path, std::string("missing entry point ") + kGoalPluginEntry);
  auto& entry = lib->get<const moonmq_goal_plugin_info*()>(kGoalPluginEntry);
  const moonmq_goal_plugin_info* info = entry();
  if (info == nullptr) return single_error(path, "entry point returned no plugin info");
  if (info->abi_version < MOONMQ_GOAL_ABI_MIN_VERSION || info->abi_version > MOONMQ_GOAL_ABI_VERSION)
    return single_error(path, "ABI version " + std::to_string(info->abi_version) + ", host expects " +
                                  std::to_string(MOONMQ_GOAL_ABI_MIN_VERSION) + " to " +
                                  std::to_string(MOONMQ_GOAL_ABI_VERSION));
  if (info->name == nullptr || info->name[0] == '\0' || info->create == nullptr || info->destroy == nullptr)
    return single_error(path, "incomplete plugin info (name, create and destroy are required)");
  std::array<char, 512> err{};
  moonmq_goal_handle* handle = info->create(err.data(), err.size());
  if (handle == nullptr) {
    err.back() = '\0';
    return single_error(path, std::string("factory failed: ") + (err[0] ? err.data() : "no message"));
  }
  auto destroy = info->destroy;
  // The deleter owns a reference to the library: destroy first, unload after.
  std::shared_ptr<const goals::goal> made(from_handle(handle), [lib, destroy](const goals::goal* g) {
    destroy(to_handle(const_cast<goals::goal*>(g)));
  });
  std::string goal_name;
  try {
    goal_name = made->name();
  } catch (...) {
    return single_error(path, "goal threw from name()");
  }
  if (goal_name != info->name)
    return single_error(path, "goal name \"" + goal_name + "\" differs from plugin name \"" + info->name + "\"");
  load_report r;
  r.goals.push_back({std::move(made), info->name, info->version ? info->version : "", info->abi_version, path});
  return r;
}

load_report load_goal_dir(const std::string& dir) {
  load_report out;
  boost::system::error_code ec;
  if (!fs::is_directory(fs::path(dir), ec)) {
    out.errors.push_back({dir, dir + ": goals directory not found or not a directory"});
    return out;
  }
  std::vector<std::string> files;
  for (fs::directory_iterator it(fs::path(dir), ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    boost::system::error_code ec2;
    if (p.extension() == ".so" && fs::is_regular_file(p, ec2)) files.push_back(p.string());
  }
  if (ec) out.errors.push_back({dir, dir + ": cannot list directory: " + ec.message()});
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    load_report one = load_goal_file(f);
    for (auto& e : one.errors) out.errors.push_back(std::move(e));
    for (auto& g : one.goals) {
      auto dup = std::find_if(out.goals.begin(), out.goals.end(), [&](const loaded_goal& x) { return x.name == g.name; });
      if (dup != out.goals.end()) {
        out.errors.push_back({f, f + ": duplicate goal name \"" + g.name + "\" (already loaded from " + dup->path + ")"});
        continue;
      }
      out.goals.push_back(std::move(g));
    }
  }
  std::sort(out.goals.begin(), out.goals.end(), [](const loaded_goal& a, const loaded_goal& b) { return a.name < b.name; });
  return out;
}

goal_registry::goal_registry(std::string dir) : dir_(std::move(dir)) {}

load_report goal_registry::reload() {
  load_report fresh = load_goal_dir(dir_);
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = fresh;
  return fresh;
}

load_report goal_registry::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

nlohmann::json plugins_json(const load_report& report) {
  nlohmann::json goals = nlohmann::json::array();
  for (const auto& g : report.goals) {
    const auto cfg = g.goal->default_config();
    goals.push_back({{"name", g.name}, {"version", g.version}, {"abi", g.abi}, {"path", g.path},
                     {"priority", cfg.priority}, {"hard", g.goal->hard()}});
  }
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& e : report.errors) errors.push_back({{"path", e.path}, {"error", e.message}});
  return {{"goals", goals}, {"errors", errors}};
}

}  // namespace moonmq::plugins
