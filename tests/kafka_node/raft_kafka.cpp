#include "tests/kafka_node/raft_kafka.hpp"

#include <cstdlib>
#include <fstream>
#include <set>

#include "cluster/group_placement.hpp"
#include "tests/kafka_node/kafka_client.hpp"
#include "tests/support/process.hpp"

namespace moonmq::test {

using namespace moonmq::test::move;
using namespace std::chrono_literals;

std::optional<size_t> raft_leader(move::move_cluster& c) {
  std::optional<size_t> found;
  wait_until(
    [&] {
      std::set<std::string> named;
      for (size_t i = 0; i < 3; ++i) {
        auto j = call(c.admin(i), "GET", "/admin/cluster").body;
        if (!j.is_object() || !j["controller"]["id"].is_string() || j["controller"]["id"].get<std::string>().empty())
          return false;
        named.insert(j["controller"]["id"].get<std::string>());
      }
      if (named.size() != 1)
        return false;
      for (size_t i = 0; i < 3; ++i)
        if (c.id(i) == *named.begin())
          found = i;
      return found.has_value();
    },
    15s);
  return found;
}

std::vector<std::string> kafka_raft(std::vector<std::string> extra) {
  std::vector<std::string> out{"Kafka.Enabled=true", "Cluster.Raft.Enabled=true",
                               "Cluster.Raft.ElectionTimeoutMs=1000", "Cluster.Raft.HeartbeatMs=100"};
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

void start_three(move::move_cluster& c) {
  for (size_t i = 0; i < 3; ++i)
    c.launch(i);
  for (size_t i = 0; i < 3; ++i)
    c.wait_ready(i);
}

std::pair<int, std::string> kafkajs_admin(const std::string& broker, const std::string& calls) {
  const auto modules = npm_modules();
  auto script = "const {Kafka,logLevel}=require('kafkajs');(async()=>{const a=new Kafka({clientId:'kmeta',brokers:['"
                + broker + "'],logLevel:logLevel.NOTHING}).admin();await a.connect();" + calls
                + "await a.disconnect();})().then(()=>process.exit(0),(e)=>{console.error(String(e));process.exit(1);});";
  return sh("NODE_PATH='" + modules + "' timeout 60 node -e \"" + script + "\" 2>&1");
}

nlohmann::json catalogue_config(const std::string& data_dir, const std::string& topic) {
  std::ifstream in(data_dir + "/topics.json");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_object() && j.contains("topics") && j["topics"].is_array())
    for (const auto& t : j["topics"])
      if (t.is_object() && t.value("name", "") == topic && t.contains("config"))
        return t["config"];
  return nullptr;
}

std::string group_coordinated_by(const std::string& id) {
  for (int n = 0;; ++n) {
    auto g = "kmeta-" + std::to_string(n);
    if (cluster::group_coordinator(g, {"b1", "b2", "b3"}) == id)
      return g;
  }
}

}  // namespace moonmq::test
