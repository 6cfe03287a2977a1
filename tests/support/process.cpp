#include "tests/support/process.hpp"

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

namespace moonmq::test {

temp_dir::temp_dir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = buf.data();
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

std::mutex expected_mtx;
std::vector<std::string> expected_fragments;  // of every live expected_log_errors

/// True for spdlog's `2026-12-06T22:49:35.753 error [node] ...` (and
/// critical): the level is the second field, the logger's name follows it.
bool error_level_line(const std::string& line) {
  auto space = line.find(' ');
  if (space != 23 || line.size() < 24 || line[4] != '-' || line[10] != 'T')
    return false;
  auto level = std::string_view(line).substr(24);
  return level.rfind("error [", 0) == 0 || level.rfind("critical [", 0) == 0;
}

}  // namespace

expected_log_errors::expected_log_errors(std::vector<std::string> fragments) : fragments_(std::move(fragments)) {
  std::lock_guard lock(expected_mtx);
  expected_fragments.insert(expected_fragments.end(), fragments_.begin(), fragments_.end());
}

expected_log_errors::~expected_log_errors() {
  std::lock_guard lock(expected_mtx);
  for (const auto& f : fragments_)
    if (auto it = std::find(expected_fragments.begin(), expected_fragments.end(), f); it != expected_fragments.end())
      expected_fragments.erase(it);
}

std::vector<std::string> unexpected_log_errors(const std::string& log_text) {
  std::vector<std::string> out;
  std::istringstream in(log_text);
  std::lock_guard lock(expected_mtx);
  for (std::string line; std::getline(in, line);) {
    if (!error_level_line(line))
      continue;
    bool expected = std::any_of(expected_fragments.begin(), expected_fragments.end(),
                                [&line](const std::string& f) { return line.find(f) != std::string::npos; });
    if (!expected)
      out.push_back(line);
  }
  return out;
}

}  // namespace moonmq::test

/// Defined by the test main (tests/catch_main.cpp); weak, so that a program
/// without it still links and reports nothing.
extern "C" void moonmq_test_unexpected_log_error(const char* log_file, const char* line) __attribute__((weak));

namespace moonmq::test {

child_process::~child_process() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    wait(std::chrono::seconds(5));
  }
  if (log_.empty() || !moonmq_test_unexpected_log_error)
    return;
  for (const auto& line : unexpected_log_errors(read_text(log_)))
    moonmq_test_unexpected_log_error(log_.c_str(), line.c_str());
}

bool child_process::start(const std::string& exe, const std::vector<std::string>& args,
                          const std::string& log_file, const std::string& cwd) {
  log_ = log_file;
  status_.reset();
  pid_ = ::fork();
  if (pid_ < 0)
    return false;
  if (pid_ == 0) {
    // Signals blocked by the parent's threads must not stay blocked in the child.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
      ::_exit(126);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  return true;
}

bool child_process::running() {
  return pid_ > 0 && !wait(std::chrono::milliseconds(0));
}

void child_process::signal(int sig) {
  if (pid_ > 0 && !status_)
    ::kill(pid_, sig);
}

std::optional<int> child_process::wait(std::chrono::milliseconds timeout) {
  if (status_ || pid_ <= 0)
    return status_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int st = 0;
    auto r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return status_;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string program(const std::string& name) {
  return std::string(MOONMQ_BINARY_DIR) + "/bin/" + name;
}

std::string npm_modules() {
  const char* npm_dir = std::getenv("MOONMQ_NPM_DIR");
  const char* home = std::getenv("HOME");
  return (npm_dir ? std::string(npm_dir) : std::string(home ? home : "") + "/.cache/moonmq-npm") + "/node_modules";
}

}  // namespace moonmq::test
