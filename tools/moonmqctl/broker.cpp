// moonmqctl broker: the standing of brokers over the admin API
// (docs/metadata.md "Drain and removal"): `list` and `show ID` print it,
// `drain ID` starts emptying a broker, `undrain ID` cancels that, `remove
// ID` retires a drained, empty broker. Each change is a metadata-log entry.

#include <chrono>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tools/moonmqctl/commands.hpp"

namespace moonmq::ctl {

using json = nlohmann::json;

namespace {

/// A broker row of /admin/brokers as a table row.
std::vector<std::string> broker_cells(const json& b) {
  return {b.value("id", ""), b.value("state", ""), b.value("fenced", false) ? "yes" : "no",
          std::to_string(b.value("partitions", int64_t{0}))};
}

/// Prints an answer: the JSON itself, or a table of its broker rows (a
/// list, or the one row of show/drain/undrain/remove with its moves).
void print_answer(const json& j, const std::string& format) {
  if (format == "json") {
    std::cout << j.dump(2) << "\n";
    return;
  }
  table t{{"BROKER", "STATE", "FENCED", "PARTITIONS"}};
  if (j.contains("brokers")) {
    for (const auto& b : j.value("brokers", json::array()))
      t.add(broker_cells(b));
    t.print(std::cout);
    return;
  }
  t.add(broker_cells(j));
  t.print(std::cout);
  if (j.contains("moves_in_flight"))
    std::cout << "\nmoves in flight from or to it: " << j.value("moves_in_flight", int64_t{0}) << "\n";
}

int call_and_print(const admin_endpoint& ep, const std::string& method, const std::string& target,
                   const std::string& format) {
  auto j = admin_request(ep, method, target);
  if (!j)
    return 1;
  print_answer(*j, format);
  return 0;
}

}  // namespace

int broker_command(const admin_endpoint& ep, const broker_options& o) {
  if (o.action == "list")
    return call_and_print(ep, "GET", "/admin/brokers", o.format);
  const auto path = "/admin/brokers/" + o.id;
  if (o.action == "show")
    return call_and_print(ep, "GET", path, o.format);
  if (o.action == "undrain")
    return call_and_print(ep, "DELETE", path + "/drain", o.format);
  if (o.action == "remove")
    return call_and_print(ep, "DELETE", path, o.format);
  // drain: the entry is recorded at once (202); with --wait, poll until the broker owns nothing.
  if (!admin_request(ep, "POST", path + "/drain"))
    return 1;
  for (;;) {
    auto j = admin_request(ep, "GET", path);
    if (!j)
      return 1;
    auto left = j->value("partitions", int64_t{-1});
    auto moves = j->value("moves_in_flight", int64_t{0});
    if (!o.wait || (left == 0 && moves == 0)) {
      print_answer(*j, o.format);
      return 0;
    }
    if (j->value("state", std::string{}) != "draining") {
      std::cerr << "moonmqctl: broker " << o.id << " is " << j->value("state", std::string{"?"})
                << ", no longer draining\n";
      print_answer(*j, o.format);
      return 1;
    }
    std::cerr << "broker " << o.id << ": " << left << " partition(s) left, " << moves << " move(s) running\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
  }
}

}  // namespace moonmq::ctl
