#pragma once
// A moonmq-node child process for benchmarks: started with `--set`
// overrides, its ports read from its node.ready log line, stopped by its own
// pid (SIGTERM, or SIGKILL when it does not exit).

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace moonmq::bench {

/// The whole file (empty when missing).
inline std::string read_text(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A numeric field of /proc/<pid>/status ("VmRSS" in kB, "Threads"), -1
/// when missing.
inline long proc_status(pid_t pid, const std::string& field) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::atol(line.c_str() + field.size() + 1);
  return -1;
}

/// utime + stime of `pid` in seconds (/proc/<pid>/stat fields 14 and 15);
/// -1 when the process is gone.
inline double cpu_seconds(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos)
    return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14)
      utime = std::atol(field.c_str());
    if (i == 15)
      stime = std::atol(field.c_str());
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

class node_child {
public:
  /// Starts `exe` with DataDir=<dir>/data, Kafka off, ephemeral client and
  /// admin ports unless `overrides` set them, plus `overrides`; its output
  /// goes to <dir>/node.log. Throws when it is not ready within 30 s.
  node_child(const std::string& exe, const std::string& dir, const std::vector<std::string>& overrides = {})
      : log_(dir + "/node.log") {
    std::filesystem::create_directories(dir);
    std::vector<std::string> sets{"Port=0", "Admin.Port=0", "DataDir=" + dir + "/data", "Kafka.Enabled=false"};
    sets.insert(sets.end(), overrides.begin(), overrides.end());
    std::vector<std::string> args{exe};
    for (const auto& s : sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::close(fd);
      }
      std::vector<char*> argv;
      for (auto& a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      ::_exit(127);
    }
    static const std::regex ready{R"(node\.ready [^\n]*admin=[^ \n]+:([0-9]+) client=[^ \n]+:([0-9]+))"};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      auto text = read_text(log_);
      if (std::regex_search(text, m, ready)) {
        admin_port = static_cast<uint16_t>(std::stoi(m[1]));
        client_port = static_cast<uint16_t>(std::stoi(m[2]));
        static const std::regex kafka{R"(node\.ready [^\n]* kafka=[^ \n]+:([0-9]+))"};
        if (std::regex_search(text, m, kafka))
          kafka_port = static_cast<uint16_t>(std::stoi(m[1]));
        return;
      }
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop(SIGKILL);
    throw std::runtime_error("moonmq-node did not start: " + read_text(log_));
  }
  ~node_child() { stop(SIGTERM); }
  node_child(const node_child&) = delete;
  node_child& operator=(const node_child&) = delete;

  /// Sends `sig` and reaps the child (SIGKILL after 10 s).
  void stop(int sig) {
    if (pid_ <= 0)
      return;
    ::kill(pid_, sig);
    int st = 0;
    for (int i = 0; i < 1000 && ::waitpid(pid_, &st, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::waitpid(pid_, &st, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
    }
    pid_ = -1;
  }

  pid_t pid() const { return pid_; }
  std::string log() const { return read_text(log_); }
  uint16_t admin_port = 0;
  uint16_t client_port = 0;
  uint16_t kafka_port = 0;  ///< 0 unless the overrides turned the Kafka listener on

private:
  std::string log_;
  pid_t pid_ = -1;
};

}  // namespace moonmq::bench
