// The README's main job as a process: scripts/demo.sh --short (without its
// install and build steps) starts three real brokers on free loopback ports
// with the balance loop on, runs moonmq-demo against them and stops them;
// with --shared on one shared directory, killing one broker halfway.
// The script runs in its own session, as under a terminal, so that a
// "Ctrl-C" is a SIGINT to its process group; the brokers run in sessions of
// their own and must be stopped by the script.

#include <catch2/catch.hpp>

#include <csignal>
#include <regex>
#include <unistd.h>

#include "tests/support/process.hpp"

namespace {

using namespace std::chrono_literals;
using moonmq::test::child_process;
using moonmq::test::read_text;
using moonmq::test::temp_dir;
using moonmq::test::wait_until;

/// True while `pid` is a live moonmq-node (not a reused pid).
bool node_alive(pid_t pid) {
  auto proc = "/proc/" + std::to_string(pid);
  return read_text(proc + "/cmdline").find("moonmq-node") != std::string::npos &&
         read_text(proc + "/stat").find(") Z") == std::string::npos;
}

/// scripts/demo.sh in its own session; stops whatever it leaves behind.
class demo_run {
public:
  explicit demo_run(std::vector<std::string> demo_args, std::vector<std::string> script_args = {})
    : dir_("moonmq-demo-test") {
    std::vector<std::string> args{"bash", std::string(MOONMQ_SOURCE_DIR) + "/scripts/demo.sh", "--short", "--no-build",
                                  "--bin-dir", std::string(MOONMQ_BINARY_DIR) + "/bin", "--free-ports",
                                  "--dir", dir_.path() + "/demo"};
    args.insert(args.end(), script_args.begin(), script_args.end());
    args.push_back("--");
    args.insert(args.end(), demo_args.begin(), demo_args.end());
    // setsid: a child of this process is no group leader, so setsid does not
    // fork and the pid is the script's, leader of its own process group.
    REQUIRE(proc_.start("/usr/bin/setsid", args, dir_.path() + "/demo.out", MOONMQ_SOURCE_DIR));
  }
  ~demo_run() {
    if (proc_.running()) {
      ::kill(-proc_.pid(), SIGTERM);
      if (!proc_.wait(20s)) {
        ::kill(-proc_.pid(), SIGKILL);
        proc_.wait(5s);
      }
    }
    for (auto pid : node_pids())
      if (node_alive(pid)) {
        ::kill(pid, SIGKILL);
        WARN("broker pid " << pid << " was left running by demo.sh");
      }
  }

  std::string output() const { return read_text(proc_.log_file()); }
  child_process& process() { return proc_; }
  /// Sends `sig` to the script's process group (what a terminal's Ctrl-C does).
  void signal_group(int sig) { ::kill(-proc_.pid(), sig); }

  /// The brokers' pids from "demo.sh: started brokers b1 b2 b3 (pids A B C)".
  std::vector<pid_t> node_pids() const {
    static const std::regex started{R"(started brokers [^(]*\(pids ([0-9]+) ([0-9]+) ([0-9]+)\))"};
    std::smatch m;
    auto text = output();
    std::vector<pid_t> out;
    if (std::regex_search(text, m, started))
      for (size_t i = 1; i <= 3; ++i)
        out.push_back(static_cast<pid_t>(std::stol(m[i])));
    return out;
  }

private:
  temp_dir dir_;
  child_process proc_;
};

void require_verified(const std::string& out) {
  CHECK(out.find("verify: PASSED") != std::string::npos);
  CHECK(out.find("; lost: 0; acknowledged twice: 0; unreadable partitions: 0") != std::string::npos);
  CHECK(out.find("verify: duplicated in the log: 0;") != std::string::npos);
  CHECK(out.find("; not consumed: 0; order or value problems: 0") != std::string::npos);
  CHECK(std::regex_search(out, std::regex{R"(verify: acknowledged records: [1-9][0-9,]* in 6 partitions)"}));
  CHECK(std::regex_search(out, std::regex{R"(verify: deliveries: [0-9,]+, repeats: [0-9,]+ \(at-least-once)"}));
  CHECK(out.find("before/after") != std::string::npos);
}

void require_brokers_stopped(demo_run& d) {
  auto pids = d.node_pids();
  REQUIRE(pids.size() == 3);
  for (auto pid : pids)
    CHECK_FALSE(node_alive(pid));
  CHECK(d.output().find("demo.sh: brokers stopped") != std::string::npos);
}

}  // namespace

TEST_CASE("demo.sh --short: the balance loop spreads topics that start on b1 and every acknowledged record checks out",
          "[demo]") {
  demo_run d{{"--require-balanced"}};
  auto rc = d.process().wait(240s);
  auto out = d.output();
  INFO(out);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  require_verified(out);
  // The balance loop moved partitions off b1 by itself, and its last pass
  // after the moves planned nothing.
  CHECK(std::regex_search(out, std::regex{R"(balanced: yes, at [0-9.]+ s \([1-9][0-9]* moves done, 0 failed)"}));
  CHECK(out.find("moonmq-demo: OK") != std::string::npos);
  require_brokers_stopped(d);
}

TEST_CASE("demo.sh: Ctrl-C stops the producers and the demo still drains and verifies and then stops every broker",
          "[demo]") {
  // Long enough that only the signal ends it; sent once the loop moved partitions.
  demo_run d{{"--duration-seconds", "600", "--until-balanced-seconds", "600"}};
  const std::regex moved{R"(moves: 0 in progress, [1-9][0-9]* done, 0 failed)"};
  if (!wait_until([&] { return std::regex_search(d.output(), moved); }, 90s))
    FAIL("no finished moves within 90 s:\n" << d.output());
  d.signal_group(SIGINT);
  auto rc = d.process().wait(90s);
  auto out = d.output();
  INFO(out);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(out.find("moonmq-demo: interrupted: stopping the producers") != std::string::npos);
  require_verified(out);
  CHECK(out.find("moonmq-demo: OK (interrupted)") != std::string::npos);
  require_brokers_stopped(d);
}

TEST_CASE("demo.sh --short --shared: a broker killed halfway fails over and every acknowledged record checks out",
          "[demo][shared]") {
  demo_run d{{}, {"--shared"}};
  auto rc = d.process().wait(180s);
  auto out = d.output();
  INFO(out);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  require_verified(out);
  // A broker that owned partitions and was not the Raft leader was killed...
  const std::regex killed{R"(failover: kill -9 (b[123]) \(pid [0-9]+\) at [0-9.]+ s: it owns [1-9][0-9]* )"
                          R"(partition\(s\) \([^)]*\) and is not the Raft leader \((b[123])\))"};
  std::smatch kill;
  REQUIRE(std::regex_search(out, kill, killed));
  const std::string victim = kill[1], leader = kill[2];
  CHECK(victim != leader);
  // ...the live view showed its partitions handed to the others, and each
  // took writes again.
  CHECK(std::regex_search(out, std::regex{"FAILOVER demo-[01]/[0-2] " + victim + " -> b[123] \\(seen"}));
  CHECK_FALSE(std::regex_search(out, std::regex{"FAILOVER demo-[01]/[0-2] " + victim + " -> " + victim}));
  CHECK(std::regex_search(out, std::regex{"failover: every partition of " + victim +
                                          " took writes again [0-9.]+ s after the kill"}));
  CHECK(out.find("failover: FAILED") == std::string::npos);
  CHECK(out.find("moonmq-demo: OK") != std::string::npos);
  require_brokers_stopped(d);
}
