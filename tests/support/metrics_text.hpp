#pragma once
// Reading the Prometheus text of GET /metrics in tests: one sample's value,
// and `promtool check metrics` (Debian package prometheus) over a text.

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "tests/support/process.hpp"

namespace moonmq::test {

/// The value of the sample `name{labels}` in Prometheus text (the labels
/// given must all match; others are ignored); nullopt when absent.
inline std::optional<double> metric(const std::string& text, const std::string& name,
                                    const std::map<std::string, std::string>& labels = {}) {
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind(name, 0) != 0)
      continue;
    auto rest = line.substr(name.size());
    std::map<std::string, std::string> have;
    if (!rest.empty() && rest[0] == '{') {
      auto close = rest.find('}');
      if (close == std::string::npos)
        continue;
      auto body = rest.substr(1, close - 1);
      size_t i = 0;
      while (i < body.size()) {
        auto eq = body.find('=', i);
        if (eq == std::string::npos || eq + 1 >= body.size() || body[eq + 1] != '"')
          break;
        std::string value;
        size_t j = eq + 2;
        for (; j < body.size() && body[j] != '"'; ++j) {
          if (body[j] == '\\' && j + 1 < body.size())
            ++j;
          value += body[j];
        }
        have[body.substr(i, eq - i)] = value;
        i = j + 1;
        if (i < body.size() && body[i] == ',')
          ++i;
      }
      rest = rest.substr(close + 1);
    }
    if (rest.empty() || rest[0] != ' ')
      continue;  // another metric whose name starts with `name`
    bool match = true;
    for (const auto& [k, v] : labels)
      match = match && have.count(k) && have[k] == v;
    if (match)
      return std::stod(rest.substr(1));
  }
  return std::nullopt;
}

/// Runs `promtool check metrics` on `text` (as a child process, through sh
/// for the stdin redirection); the exit code and its output (-1 when it
/// could not be started or did not end within 30 s).
inline std::pair<int, std::string> promtool_check(const std::string& text) {
  temp_dir dir{"moonmq-promtool"};
  auto file = dir.path() + "/metrics.txt";
  std::ofstream{file} << text;
  child_process p;
  auto log = dir.path() + "/promtool.log";
  if (!p.start("/bin/sh", {"-c", "exec promtool check metrics < \"$0\"", file}, log))
    return {-1, "promtool could not be started"};
  auto rc = p.wait(std::chrono::seconds(30));
  return {rc.value_or(-1), read_text(log)};
}

}  // namespace moonmq::test
