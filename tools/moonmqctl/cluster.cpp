// moonmqctl cluster info: the cluster at a glance, as `rpk cluster info`
// prints it: the controller, every broker with its address, liveness,
// standing and the partitions and bytes it owns, and the totals.

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tools/common/progress_bar.hpp"
#include "tools/moonmqctl/commands.hpp"

namespace moonmq::ctl {

using json = nlohmann::json;

int cluster_info(const admin_endpoint& ep, const std::string& format) {
  auto cluster = admin_request(ep, "GET", "/admin/cluster");
  if (!cluster)
    return 1;
  // A standalone broker has no metadata log: 409 no_metadata_log, no standings.
  json standing = json::object();
  auto brokers = admin_call(ep, "GET", "/admin/brokers");
  if (!brokers)
    return 1;
  if (brokers->status == 200) {
    auto j = body_json(*brokers, "GET /admin/brokers");
    if (!j)
      return 1;
    for (const auto& b : j->value("brokers", json::array()))
      standing[b.value("id", "")] = b;
  } else if (brokers->status != 409) {
    print_http_error("GET /admin/brokers", *brokers);
    return 1;
  }

  std::map<std::string, int64_t> owned, bytes;
  std::set<std::string> topics;
  int64_t total_bytes = 0, ownerless = 0;
  auto partitions = cluster->value("partitions", json::array());
  for (const auto& p : partitions) {
    topics.insert(p.value("topic", ""));
    auto owner = p.value("owner", json());
    auto size = p.value("size_bytes", json());
    if (!owner.is_string()) {
      ++ownerless;
      continue;
    }
    ++owned[owner.get<std::string>()];
    if (size.is_number_integer()) {
      bytes[owner.get<std::string>()] += size.get<int64_t>();
      total_bytes += size.get<int64_t>();
    }
  }
  bool all_alive = true;
  json rows = json::array();
  for (const auto& b : cluster->value("brokers", json::array())) {
    auto id = b.value("id", "");
    json row{{"id", id},
             {"address", b.value("address", json())},
             {"client_address", b.value("client_address", json())},
             {"alive", b.value("alive", false)},
             {"self", b.value("self", false)},
             {"partitions", owned[id]},
             {"size_bytes", bytes[id]}};
    if (standing.contains(id)) {
      row["state"] = standing[id].value("state", "");
      row["fenced"] = standing[id].value("fenced", false);
    }
    if (b.contains("error"))
      row["error"] = b["error"];
    all_alive = all_alive && row["alive"].get<bool>();
    rows.push_back(row);
  }
  // Removed brokers are still in the log's broker list; the survey skips them.
  for (const auto& [id, s] : standing.items())
    if (std::none_of(rows.begin(), rows.end(), [&](const json& r) { return r["id"] == id; }))
      rows.push_back({{"id", id}, {"alive", false}, {"self", false}, {"state", s.value("state", "")},
                      {"fenced", s.value("fenced", false)}, {"partitions", owned[id]}, {"size_bytes", bytes[id]}});
  auto controller = cluster->value("controller", json::object());
  json info{{"controller", controller},
            {"brokers", rows},
            {"topics", topics.size()},
            {"partitions", partitions.size()},
            {"partitions_without_owner", ownerless},
            {"size_bytes", total_bytes}};
  if (format == "json") {
    std::cout << info.dump(2) << "\n";
    return all_alive ? 0 : 1;
  }
  auto id = controller.value("id", json());
  std::cout << "CONTROLLER  "
            << (id.is_string() ? id.get<std::string>() + " (epoch " + std::to_string(controller.value("epoch", 0))
                                   + (controller.contains("commit_index")
                                        ? ", commit index " + std::to_string(controller.value("commit_index", 0))
                                        : std::string{})
                                   + ")"
                               : std::string{"none"})
            << "\nTOPICS      " << topics.size() << "\nPARTITIONS  " << partitions.size();
  if (ownerless > 0)
    std::cout << " (" << ownerless << " without an owner)";
  std::cout << "\nSIZE        " << tools::human_bytes(static_cast<double>(total_bytes)) << "\n\n";
  table t{{"BROKER", "ADDRESS", "CLIENT", "ALIVE", "STATE", "FENCED", "PARTITIONS", "SIZE"}};
  auto text = [](const json& r, const char* key) {
    auto v = r.value(key, json());
    return v.is_string() ? v.get<std::string>() : std::string{"-"};
  };
  for (const auto& r : rows)
    t.add({text(r, "id") + (r.value("self", false) ? "*" : ""), text(r, "address"), text(r, "client_address"),
           r.value("alive", false) ? "yes" : "no", r.contains("state") ? text(r, "state") : "-",
           r.contains("fenced") ? (r.value("fenced", false) ? "yes" : "no") : "-",
           std::to_string(r.value("partitions", int64_t{0})),
           tools::human_bytes(static_cast<double>(r.value("size_bytes", int64_t{0})))});
  t.print(std::cout);
  for (const auto& r : rows)
    if (r.contains("error"))
      std::cerr << "moonmqctl: broker " << text(r, "id") << ": " << text(r, "error") << "\n";
  return all_alive ? 0 : 1;
}

}  // namespace moonmq::ctl
