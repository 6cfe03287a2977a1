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
  /// SIGKILLs a child still running, then reports its log's unexpected
  /// error-level lines (expected_log_errors).
  ~child_process();
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

/// Error-level lines a test expects its programs to log. A test run fails
/// on any error or critical line of a moonmq program (spdlog's format,
/// `<time> error [<logger>] ...`) that it did not expect: each
/// child_process reads its log file when it is destroyed and reports the
/// lines no live expected_log_errors names to the test main
/// (tests/catch_main.cpp), which prints them and exits 1. Declare one at
/// the top of a test that provokes such errors, before the processes, so
/// that it outlives them.
class expected_log_errors {
public:
  /// Lines containing any of `fragments` (e.g. an event name such as
  /// "node.listen_failed") are expected while this object lives.
  explicit expected_log_errors(std::vector<std::string> fragments);
  ~expected_log_errors();
  expected_log_errors(const expected_log_errors&) = delete;
  expected_log_errors& operator=(const expected_log_errors&) = delete;

private:
  std::vector<std::string> fragments_;
};

/// The error and critical lines of `log_text` (spdlog's format, above)
/// that no live expected_log_errors names, in order.
std::vector<std::string> unexpected_log_errors(const std::string& log_text);

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
