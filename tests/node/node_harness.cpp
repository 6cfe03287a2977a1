#include "tests/node/node_harness.hpp"

#include <regex>

namespace moonmq::test {

node_process::node_process(const temp_dir& dir, std::vector<std::string> overrides,
                           std::vector<std::string> extra_args) {
  auto has = [&](const std::string& key) {
    for (const auto& o : overrides)
      if (o.rfind(key + "=", 0) == 0)
        return true;
    return false;
  };
  if (!has("Admin.Port"))
    overrides.push_back("Admin.Port=0");
  if (!has("Port"))
    overrides.push_back("Port=0");
  if (!has("DataDir"))
    overrides.push_back("DataDir=" + dir.path() + "/data");
  if (!has("Kafka.Enabled"))
    overrides.push_back("Kafka.Enabled=false");
  std::vector<std::string> args;
  for (const auto& o : overrides) {
    args.push_back("--set");
    args.push_back(o);
  }
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  static int counter = 0;
  proc_.start(program("moonmq-node"), args, dir.path() + "/node-" + std::to_string(++counter) + ".log", dir.path());
}

std::optional<uint16_t> node_process::wait_ready(std::chrono::milliseconds timeout) {
  // A whole line (up to its newline), so that the client port is never read
  // from a line still being written.
  static const std::regex ready{R"(node\.ready [^\n]*admin=[^ \n]+:([0-9]+)(?: client=[^ \n]+:([0-9]+))?[^\n]*\n)"};
  std::optional<uint16_t> port;
  wait_until(
    [&] {
      std::smatch m;
      auto text = log();
      if (std::regex_search(text, m, ready)) {
        port = static_cast<uint16_t>(std::stoi(m[1]));
        if (m[2].matched)
          client_port_ = static_cast<uint16_t>(std::stoi(m[2]));
        return true;
      }
      return !proc_.running();
    },
    timeout);
  return port;
}

std::pair<int, std::string> run_node(const temp_dir& dir, const std::vector<std::string>& args) {
  child_process p;
  static int counter = 0;
  auto log_file = dir.path() + "/run-" + std::to_string(++counter) + ".log";
  p.start(program("moonmq-node"), args, log_file, dir.path());
  auto rc = p.wait(std::chrono::seconds(20));
  return {rc.value_or(-1), read_text(log_file)};
}

}  // namespace moonmq::test
