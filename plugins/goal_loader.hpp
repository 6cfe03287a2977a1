#pragma once
// Loads goal plugins (*.so) from a directory with Boost.DLL
// (rtld_now | rtld_local). Failures are values: each bad file yields a
// load_error naming the path; nothing throws, nothing crashes the host.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "goals/goal.hpp"

namespace moonmq::plugins {

/// A goal made by a plugin. `goal` shares ownership of the library: the
/// library stays loaded until the last copy of `goal` is released.
struct loaded_goal {
  std::shared_ptr<const goals::goal> goal;
  std::string name;      // from the plugin info (equals goal->name())
  std::string version;   // plugin version string
  std::uint32_t abi = 0; // ABI version the plugin was built for
  std::string path;      // file it came from
};

/// Why one file was refused.
struct load_error {
  std::string path;
  std::string message;  // names the path, e.g. "...: ABI version 2, host expects 3 to 4"
};

/// Result of scanning a directory: goals sorted by name, errors by path.
struct load_report {
  std::vector<loaded_goal> goals;
  std::vector<load_error> errors;
};

/// Loads one plugin file. Errors: not loadable (dlopen message), missing
/// entry point, null info, ABI version mismatch (path and both versions),
/// factory failure (its message), created goal's name differing from the info.
load_report load_goal_file(const std::string& path);

/// Loads every regular file ending in ".so" in `dir` (not recursive), in
/// path order. A goal name already loaded from an earlier file is refused
/// with an error naming both files. A missing or unreadable directory gives
/// one error for the directory.
load_report load_goal_dir(const std::string& dir);

/// The currently loaded goal set of a goals directory; reload() swaps it.
/// Goals handed out earlier stay valid (shared ownership). Thread-safe.
class goal_registry {
 public:
  explicit goal_registry(std::string dir);
  /// Rescans the directory and replaces the current set; returns the new
  /// report (goals + per-file errors). On errors the files that loaded still replace the old set.
  load_report reload();
  /// The current set (as of the last reload()).
  load_report current() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  mutable std::mutex mutex_;
  load_report current_;
};

/// {"goals":[{"name","version","abi","path","priority","hard"}],
///  "errors":[{"path","error"}]} (CONTRACT §4 GET /admin/plugins; "errors"
/// is an addition). priority/hard are the goal's defaults.
nlohmann::json plugins_json(const load_report& report);

}  // namespace moonmq::plugins
