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

/// One admin request whose 2xx JSON answer is printed; exit 1 otherwise.
int call_and_print(const admin_endpoint& ep, const std::string& method, const std::string& target) {
  auto res = admin_call(ep, method, target);
  if (!res)
    return 1;
  auto what = method + " " + target;
  if (res->status / 100 != 2) {
    print_http_error(what, *res);
    return 1;
  }
  auto j = body_json(*res, what);
  if (!j)
    return 1;
  std::cout << j->dump(2) << "\n";
  return 0;
}

}  // namespace

int broker_command(const admin_endpoint& ep, const broker_options& o) {
  if (o.action == "list")
    return call_and_print(ep, "GET", "/admin/brokers");
  const auto path = "/admin/brokers/" + o.id;
  if (o.action == "show")
    return call_and_print(ep, "GET", path);
  if (o.action == "undrain")
    return call_and_print(ep, "DELETE", path + "/drain");
  if (o.action == "remove")
    return call_and_print(ep, "DELETE", path);
  // drain: the entry is recorded at once; with --wait, poll until the broker owns nothing.
  auto res = admin_call(ep, "POST", path + "/drain");
  if (!res)
    return 1;
  if (res->status != 202) {
    print_http_error("POST " + path + "/drain", *res);
    return 1;
  }
  for (;;) {
    auto now = admin_call(ep, "GET", path);
    if (!now)
      return 1;
    auto j = now->status == 200 ? body_json(*now, "GET " + path) : std::nullopt;
    if (!j) {
      print_http_error("GET " + path, *now);
      return 1;
    }
    auto left = j->value("partitions", int64_t{-1});
    auto moves = j->value("moves_in_flight", int64_t{0});
    if (!o.wait || (left == 0 && moves == 0)) {
      std::cout << j->dump(2) << "\n";
      return 0;
    }
    if (j->value("state", std::string{}) != "draining") {
      std::cerr << "moonmqctl: broker " << o.id << " is " << j->value("state", std::string{"?"})
                << ", no longer draining\n";
      std::cout << j->dump(2) << "\n";
      return 1;
    }
    std::cerr << "broker " << o.id << ": " << left << " partition(s) left, " << moves << " move(s) running\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
  }
}

}  // namespace moonmq::ctl
