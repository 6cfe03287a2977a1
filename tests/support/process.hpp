#pragma once
// Child processes and scratch directories for integration tests. Children are
// stopped by their own process id (never by name).

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace moonmq::test {

/// A directory under $TMPDIR removed (recursively) on destruction.
class temp_dir {
public:
  explicit temp_dir(const std::string& prefix = "moonmq-test");
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

class child_process {
public:
  child_process() = default;
  ~child_process();  ///< SIGKILLs a child still running
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// Starts `exe args...` with stdout and stderr appended to `log_file`.
  bool start(const std::string& exe, const std::vector<std::string>& args, const std::string& log_file,
             const std::string& cwd = {});
  pid_t pid() const { return pid_; }
  bool running();
  void signal(int sig);
  /// Waits up to `timeout`; the exit code (128+signal when killed), or
  /// nullopt if still running.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  const std::string& log_file() const { return log_; }

private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string log_;
};

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

/// The whole file (empty when missing).
std::string read_text(const std::string& path);

/// Path of a built program (build/bin/<name>).
std::string program(const std::string& name);

/// Where scripts/install-deps.sh put the npm test clients (kafkajs,
/// puppeteer-core): $MOONMQ_NPM_DIR/node_modules, default
/// ~/.cache/moonmq-npm/node_modules; the NODE_PATH of the tests' scripts.
std::string npm_modules();

}  // namespace moonmq::test
