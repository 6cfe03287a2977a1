// moonmqctl balancer: the balance loop's settings over the admin API
// (docs/balancer.md): `show` prints them, `set` changes them cluster-wide
// through the metadata log (PATCH /admin/balancer).

#include <iostream>

#include <nlohmann/json.hpp>

#include "tools/moonmqctl/commands.hpp"

namespace moonmq::ctl {

using json = nlohmann::json;

int balancer_show(const admin_endpoint& ep) {
  auto res = admin_call(ep, "GET", "/admin/balancer");
  if (!res)
    return 1;
  if (res->status != 200) {
    print_http_error("GET /admin/balancer", *res);
    return 1;
  }
  auto j = body_json(*res, "GET /admin/balancer");
  if (!j)
    return 1;
  json out{{"broker_id", j->value("broker_id", "")},
           {"settings", j->value("settings", json::object())},
           {"settings_source", j->value("settings_source", "")},
           {"controller", j->value("controller", json::object())},
           {"passes", j->value("passes", 0)}};
  std::cout << out.dump(2) << "\n";
  return 0;
}

int balancer_set(const admin_endpoint& ep, const balancer_options& o) {
  json patch = json::object();
  for (const auto& kv : o.settings) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "moonmqctl: a setting is KEY=VALUE (VALUE in JSON: false, 30, '[\"a\"]', null), got '" << kv
                << "'\n";
      return 2;
    }
    auto key = kv.substr(0, eq);
    auto value = json::parse(kv.substr(eq + 1), nullptr, false);
    if (value.is_discarded())
      value = kv.substr(eq + 1);  // a bare word is a string; the broker says whether it fits the key
    patch[key] = value;
  }
  auto res = admin_call(ep, "PATCH", "/admin/balancer", patch.dump());
  if (!res)
    return 1;
  if (res->status != 200) {
    print_http_error("PATCH /admin/balancer", *res);
    return 1;
  }
  auto j = body_json(*res, "PATCH /admin/balancer");
  if (!j)
    return 1;
  std::cout << j->value("settings", json::object()).dump(2) << "\n";
  return 0;
}

}  // namespace moonmq::ctl
