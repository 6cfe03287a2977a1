// moonmqctl topic and group: everyday administration over the client API,
// in the shape of Redpanda's rpk (docs/client-api.md "Topic
// administration", docs/groups.md "Administration"):
//
//   topic list | create NAME [-p N] [-c KEY=VALUE]... | describe NAME |
//         alter-config NAME [--set KEY=VALUE]... [--delete KEY]... |
//         add-partitions NAME -n N | delete NAME...
//   group list | describe GROUP | delete GROUP...
//
// `--format text` (default) prints aligned tables with human-sized bytes;
// `--format json` prints the API's answers. Exit 0, 1 when a request
// failed or was refused, 2 for bad usage.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "tools/common/progress_bar.hpp"
#include "tools/moonmqctl/commands.hpp"
#include "util/names.hpp"

namespace moonmq::ctl {

using json = nlohmann::json;

namespace {

using tools::human_bytes;

/// One request to the client API: its JSON answer on 2xx, else prints why
/// and returns nullopt.
std::optional<json> request(const endpoint& ep, const std::string& method, const std::string& target,
                            const std::string& body = {}) {
  auto res = transport::http_call(ep.host, ep.port, method, target, body, {{"Content-Type", "application/json"}});
  auto what = method + " " + target;
  if (res.status == 0) {
    std::cerr << "moonmqctl: " << what << ": " << res.error << "\n";
    return std::nullopt;
  }
  if (res.status / 100 != 2) {
    print_http_error(what, res);
    return std::nullopt;
  }
  return body_json(res, what);
}

/// "KEY=VALUE" split at the first '='; false when there is none.
bool split_pair(const std::string& pair, std::string& key, std::string& value) {
  auto eq = pair.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  key = pair.substr(0, eq);
  value = pair.substr(eq + 1);
  return true;
}

int print_json(const json& j) {
  std::cout << j.dump(2) << "\n";
  return 0;
}

int topic_list(const endpoint& ep, const admin_options& o) {
  auto j = request(ep, "GET", "/v1/topics");
  if (!j)
    return 1;
  if (o.format == "json")
    return print_json(*j);
  table t{{"NAME", "PARTITIONS"}};
  for (const auto& row : j->value("topics", json::array()))
    t.add({row.value("name", ""), std::to_string(row.value("partitions", 0))});
  t.print(std::cout);
  return 0;
}

int topic_create(const endpoint& ep, const admin_options& o) {
  json body{{"name", o.name}};
  if (o.partitions > 0)
    body["partitions"] = o.partitions;
  json config = json::object();
  for (const auto& pair : o.set) {
    std::string k, v;
    if (!split_pair(pair, k, v)) {
      std::cerr << "moonmqctl: -c expects KEY=VALUE, got '" << pair << "'\n";
      return 2;
    }
    config[k] = v;
  }
  if (!config.empty())
    body["config"] = config;
  auto j = request(ep, "POST", "/v1/topics", body.dump());
  if (!j)
    return 1;
  if (o.format == "json")
    return print_json(*j);
  std::cout << "created " << j->value("name", o.name) << " with " << j->value("partitions", 0) << " partition(s)\n";
  return 0;
}

int topic_describe(const endpoint& ep, const admin_options& o) {
  auto j = request(ep, "GET", "/v1/topics/" + o.name);
  if (!j)
    return 1;
  if (o.format == "json")
    return print_json(*j);
  auto parts = j->value("partitions", json::array());
  std::cout << "NAME        " << j->value("name", "") << "\nPARTITIONS  " << parts.size() << "\nSIZE        "
            << human_bytes(static_cast<double>(j->value("size_bytes", int64_t{0}))) << "\n\nCONFIGS\n";
  table configs{{"KEY", "VALUE", "SOURCE"}};
  for (const auto& c : j->value("config", json::array()))
    configs.add({c.value("name", ""), c.value("value", ""),
                 c.value("read_only", false) ? "read-only"
                                             : c.value("source", c.value("default", true) ? "default" : "topic")});
  configs.print(std::cout);
  std::cout << "\nPARTITIONS\n";
  table rows{{"PARTITION", "OWNER", "LOG-START", "LOG-END", "SIZE"}};
  for (const auto& p : parts) {
    auto num = [&](const char* key) {
      auto v = p.value(key, json(nullptr));
      return v.is_number() ? std::to_string(v.get<int64_t>()) : std::string{"-"};
    };
    auto owner = p.value("owner", json(nullptr));
    rows.add({std::to_string(p.value("partition", 0)), owner.is_string() ? owner.get<std::string>() : "-",
              num("log_start_offset"), num("log_end_offset"),
              p.value("size_bytes", json(nullptr)).is_number()
                ? human_bytes(static_cast<double>(p.value("size_bytes", int64_t{0})))
                                       : p.value("error", std::string{"-"})});
  }
  rows.print(std::cout);
  return 0;
}

int topic_alter_config(const endpoint& ep, const admin_options& o) {
  json patch = json::object();
  for (const auto& pair : o.set) {
    std::string k, v;
    if (!split_pair(pair, k, v)) {
      std::cerr << "moonmqctl: --set expects KEY=VALUE, got '" << pair << "'\n";
      return 2;
    }
    patch[k] = v;
  }
  for (const auto& k : o.remove)
    patch[k] = nullptr;
  if (patch.empty()) {
    std::cerr << "moonmqctl: alter-config needs --set KEY=VALUE or --delete KEY\n";
    return 2;
  }
  auto j = request(ep, "PATCH", "/v1/topics/" + o.name + "/config", patch.dump());
  if (!j)
    return 1;
  if (o.format == "json")
    return print_json(*j);
  table t{{"KEY", "VALUE", "SOURCE"}};
  for (const auto& c : j->value("configs", json::array()))
    t.add({c.value("name", ""), c.value("value", ""), c.value("default", true) ? "default" : "topic"});
  t.print(std::cout);
  return 0;
}

int topic_add_partitions(const endpoint& ep, const admin_options& o) {
  auto now = request(ep, "GET", "/v1/topics/" + o.name);
  if (!now)
    return 1;
  auto count = static_cast<int>(now->value("partitions", json::array()).size()) + o.add;
  auto j = request(ep, "POST", "/v1/topics/" + o.name + "/partitions", json{{"count", count}}.dump());
  if (!j)
    return 1;
  if (o.format == "json")
    return print_json(*j);
  std::cout << o.name << " now has " << j->value("partitions", count) << " partitions\n";
  return 0;
}

/// DELETE <prefix><name> for each name; exit 1 when any failed.
int delete_each(const endpoint& ep, const admin_options& o, const std::string& prefix) {
  int rc = 0;
  for (const auto& name : o.names) {
    auto j = request(ep, "DELETE", prefix + name);
    if (!j) {
      rc = 1;
      continue;
    }
    if (o.format == "json")
      print_json(*j);
    else
      std::cout << "deleted " << name << "\n";
  }
  return rc;
}

int group_list(const endpoint& ep, const admin_options& o) {
  auto j = request(ep, "GET", "/v1/groups");
  if (!j)
    return 1;
  if (o.format == "json")
    return print_json(*j);
  table t{{"GROUP", "COORDINATOR", "PROTOCOL", "STATE", "MEMBERS"}};
  for (const auto& g : j->value("groups", json::array())) {
    auto protocol = g.value("protocol", json(nullptr));
    t.add({g.value("group", ""), g.value("coordinator", ""),
           protocol.is_string() ? protocol.get<std::string>() : "-", g.value("state", ""),
           std::to_string(g.value("members", 0))});
  }
  t.print(std::cout);
  for (const auto& id : j->value("unreachable", json::array()))
    std::cerr << "moonmqctl: broker " << id.get<std::string>() << " did not answer; its groups may be missing\n";
  return j->value("unreachable", json::array()).empty() ? 0 : 1;
}

int group_describe(const endpoint& ep, const admin_options& o) {
  auto j = request(ep, "GET", "/v1/groups/" + o.name);
  if (!j)
    return 1;
  if (o.format == "json")
    return print_json(*j);
  std::cout << "GROUP        " << j->value("group", "") << "\nCOORDINATOR  " << j->value("coordinator", "")
            << "\nSTATE        " << j->value("state", "") << "\nMEMBERS      "
            << j->value("members", json::array()).size() << "\nTOTAL-LAG    " << j->value("lag", int64_t{0})
            << (j->value("lag_complete", true) ? "" : " (some owners did not answer)") << "\n\n";
  std::map<std::pair<std::string, int32_t>, std::string> member_of;
  for (const auto& m : j->value("members", json::array()))
    for (const auto& a : m.value("assignment", json::array()))
      member_of[{a.value("topic", ""), a.value("partition", 0)}] = m.value("member_id", "");
  table t{{"TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "MEMBER"}};
  for (const auto& r : j->value("offsets", json::array())) {
    auto key = std::make_pair(r.value("topic", ""), r.value("partition", 0));
    auto num = [&](const char* k) {
      auto v = r.value(k, json(nullptr));
      return v.is_number() ? std::to_string(v.get<int64_t>()) : std::string{"-"};
    };
    t.add({key.first, std::to_string(key.second), num("offset"), num("log_end_offset"), num("lag"),
           member_of.count(key) ? member_of[key] : "-"});
  }
  t.print(std::cout);
  return 0;
}

}  // namespace

void table::print(std::ostream& out) const {
  std::vector<size_t> width;
  auto widen = [&](const std::vector<std::string>& row) {
    if (width.size() < row.size())
      width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  widen(header);
  for (const auto& r : rows)
    widen(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (size_t i = 0; i < row.size(); ++i) {
      text += row[i];
      if (i + 1 < row.size())
        text += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << text << "\n";
  };
  line(header);
  for (const auto& r : rows)
    line(r);
}

/// Topic and group names go into URL paths: only [A-Za-z0-9._-]{1,249}
/// (moonmq's rule for both), checked before any request.
bool names_ok(const admin_options& o) {
  auto ok = [](const std::string& n) {
    return util::is_name(n, 1, 249);
  };
  std::vector<std::string> all = o.names;
  if (!o.name.empty() || (o.action != "list" && o.action != "delete"))
    all.push_back(o.name);
  for (const auto& n : all)
    if (!ok(n)) {
      std::cerr << "moonmqctl: invalid name '" << n << "' (expected [A-Za-z0-9._-]{1,249})\n";
      return false;
    }
  return true;
}

int topic_command(const endpoint& ep, const admin_options& o) {
  if (!names_ok(o))
    return 2;
  if (o.action == "list")
    return topic_list(ep, o);
  if (o.action == "create")
    return topic_create(ep, o);
  if (o.action == "describe")
    return topic_describe(ep, o);
  if (o.action == "alter-config")
    return topic_alter_config(ep, o);
  if (o.action == "add-partitions")
    return topic_add_partitions(ep, o);
  return delete_each(ep, o, "/v1/topics/");
}

int group_command(const endpoint& ep, const admin_options& o) {
  if (!names_ok(o))
    return 2;
  if (o.action == "list")
    return group_list(ep, o);
  if (o.action == "describe")
    return group_describe(ep, o);
  return delete_each(ep, o, "/v1/groups/");
}

}  // namespace moonmq::ctl
