#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "config/loader.hpp"
#include "tests/support/process.hpp"

using moonmq::config::load;
using moonmq::config::load_text;

namespace {

bool has_error_naming(const moonmq::config::load_result& r, const std::string& needle) {
  return std::any_of(r.errors.begin(), r.errors.end(),
                     [&](const std::string& e) { return e.find(needle) != std::string::npos; });
}

void write(const std::string& path, const std::string& text) {
  std::ofstream{path} << text;
}

}  // namespace

TEST_CASE("no config gives the documented single-broker defaults", "[config]") {
  auto r = load("", "", {});
  REQUIRE(r.ok());
  CHECK(r.config.client.port == 8080);
  CHECK(r.config.client.host == "127.0.0.1");
  CHECK(r.config.admin.port == 9644);
  CHECK(r.config.data_dir == "./data");
  CHECK(r.config.kafka.port == 9092);
  CHECK(r.config.kafka.group_initial_rebalance_delay_ms == 3000);  // Kafka's default
  CHECK_FALSE(r.config.cluster.has_value());
  CHECK(r.config.autobalance.dry_run);
  CHECK(r.config.autobalance.percentile == Approx(0.9));
  CHECK(r.config.scheduler.policy == "sharing");
  CHECK(r.config.broker_id() == "local");
}

TEST_CASE("a file with comments is read and every section is bound", "[config]") {
  auto r = load_text(R"({
    // client API
    "Server": {
      "Port": 8081, "DataDir": "/var/lib/moonmq", /* block comment */
      "Admin": { "Port": 9700, "Token": "s3cret" },
      "Kafka": { "Enabled": false, "Port": 19092, "AdvertisedHost": "kafka.local",
                 "GroupInitialRebalanceDelayMs": 0 },
      "Cluster": { "BrokerId": "b1", "Port": 9095, "Token": "t", "PeerTimeout": 7, "BatchBytes": 65536,
                   "MoveWindow": 8,
                   "Peers": [ { "Id": "b2", "Address": "127.0.0.1:9096", "ClientAddress": "127.0.0.1:8082" } ],
                   "Raft": { "Enabled": true, "ElectionTimeoutMs": 800, "HeartbeatMs": 100, "MaxLogEntries": 64 } },
      "Autobalance": { "Enabled": true, "IntervalSeconds": 5, "DryRun": false, "Window": 10, "MinValid": 2,
                       "Percentile": 0.5, "Goals": { "NW_IN": { "Enabled": true, "AvgDeviation": 0.1 },
                                                     "DISK": { "Enabled": false } },
                       "ExcludedTopics": ["audit"], "ExcludedBrokers": ["b3"] }
    } })",
                     "test.json");
  INFO((r.errors.empty() ? std::string{} : r.errors.front()));
  REQUIRE(r.ok());
  CHECK(r.warnings.empty());
  const auto& c = r.config;
  CHECK(c.client.port == 8081);
  CHECK(c.data_dir == "/var/lib/moonmq");
  CHECK(c.admin.port == 9700);
  CHECK(c.admin.token == "s3cret");
  CHECK_FALSE(c.kafka.enabled);
  CHECK(c.kafka.advertised_host == "kafka.local");
  CHECK(c.kafka.group_initial_rebalance_delay_ms == 0);
  REQUIRE(c.cluster);
  CHECK(c.broker_id() == "b1");
  CHECK(c.cluster->peer_timeout_seconds == 7);
  CHECK(c.cluster->batch_bytes == 65536);
  CHECK(c.cluster->move_window == 8);
  REQUIRE(c.cluster->peers.size() == 1);
  CHECK(c.cluster->peers[0].client_address == "127.0.0.1:8082");
  CHECK(c.cluster->raft.enabled);
  CHECK(c.cluster->raft.max_log_entries == 64);
  CHECK(c.autobalance.enabled);
  CHECK_FALSE(c.autobalance.dry_run);
  CHECK(c.autobalance.min_valid == 2);
  CHECK(c.autobalance.goals.at("NW_IN").avg_deviation == Approx(0.1));
  CHECK(c.autobalance.goals.at("DISK").enabled == false);
  CHECK_FALSE(c.autobalance.goals.at("DISK").avg_deviation.has_value());
  CHECK(c.autobalance.excluded_topics == std::vector<std::string>{"audit"});
}

TEST_CASE("wrong types and out-of-range values are errors naming the key path", "[config]") {
  auto r = load_text(R"({"Server": {"Port": "8080", "Admin": {"Port": -1},
                       "Kafka": {"Enabled": "yes", "GroupInitialRebalanceDelayMs": 300001,
                                 "TransactionalIdExpirationMs": 999},
                       "Autobalance": {"Percentile": 1.5, "Window": 0}}})",
                     "t.json");
  CHECK_FALSE(r.ok());
  CHECK(has_error_naming(r, "Server.Port: expected an integer, got string"));
  CHECK(has_error_naming(r, "Server.Admin.Port: must be between 0 and 65535, got -1"));
  CHECK(has_error_naming(r, "Server.Kafka.Enabled: expected true or false"));
  CHECK(has_error_naming(r, "Server.Kafka.GroupInitialRebalanceDelayMs"));
  CHECK(has_error_naming(r, "Server.Kafka.TransactionalIdExpirationMs"));
  CHECK(has_error_naming(r, "Server.Autobalance.Percentile"));
  CHECK(has_error_naming(r, "Server.Autobalance.Window"));
}

TEST_CASE("Cluster.MoveWindow defaults to 4 and is refused outside 1-16", "[config]") {
  auto ok = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})", "t.json");
  REQUIRE(ok.ok());
  CHECK(ok.config.cluster->move_window == 4);
  for (const char* bad : {"0", "17"}) {
    auto r = load_text(std::string(R"({"Server": {"Cluster": {"BrokerId": "b1", "MoveWindow": )") + bad + "}}}",
                       "t.json");
    CHECK_FALSE(r.ok());
    CHECK(has_error_naming(r, "Server.Cluster.MoveWindow: must be"));
  }
}

TEST_CASE("Storage.WalMaxBatchBytes defaults to 64 KiB, is read, and is refused outside 1 KiB-1 GiB", "[config]") {
  auto ok = load_text(R"({"Server": {}})", "t.json");
  REQUIRE(ok.ok());
  CHECK(ok.config.broker.wal_max_batch_bytes == 65536);
  auto set = load_text(R"({"Server": {"Storage": {"WalMaxBatchBytes": 1024}}})", "t.json");
  REQUIRE(set.ok());
  CHECK(set.config.broker.wal_max_batch_bytes == 1024);
  for (const char* bad : {"1023", "1073741825", "\"64k\""}) {
    auto r = load_text(std::string(R"({"Server": {"Storage": {"WalMaxBatchBytes": )") + bad + "}}}", "t.json");
    CHECK_FALSE(r.ok());
    CHECK(has_error_naming(r, "Server.Storage.WalMaxBatchBytes"));
  }
}

TEST_CASE("Autobalance.AvoidBrokerSeconds defaults to 1800 s, is read, and is refused out of range", "[config]") {
  CHECK(load("", "", {}).config.autobalance.avoid_broker_seconds == 1800);
  auto r = load_text(R"({"Server": {"Autobalance": {"AvoidBrokerSeconds": 600}}})", "t.json");
  REQUIRE(r.ok());
  CHECK(r.config.autobalance.avoid_broker_seconds == 600);
  CHECK(has_error_naming(load_text(R"({"Server": {"Autobalance": {"AvoidBrokerSeconds": -1}}})", "t.json"),
                         "Server.Autobalance.AvoidBrokerSeconds"));
  CHECK(has_error_naming(load_text(R"({"Server": {"Autobalance": {"AvoidBrokerSeconds": 2678401}}})", "t.json"),
                         "Server.Autobalance.AvoidBrokerSeconds"));
}

TEST_CASE("a port above 65535 is refused", "[config]") {
  auto r = load_text(R"({"Server": {"Admin": {"Port": 70000}}})", "t.json");
  CHECK(has_error_naming(r, "Server.Admin.Port"));
}

TEST_CASE("malformed JSON names the file, line and column", "[config]") {
  auto r = load_text("{\n  \"Server\": {\n    \"Port\": 80,\n  }\n}\n", "bad.json");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].find("bad.json:4:") == 0);
  CHECK(r.errors[0].find("malformed JSON") != std::string::npos);
}

TEST_CASE("a torn file (cut in the middle) is malformed, not half-applied", "[config]") {
  auto r = load_text(R"({"Server": {"Port": 8081, "Admin": {"Po)", "torn.json");
  CHECK_FALSE(r.ok());
  CHECK(r.errors[0].find("torn.json:1:") == 0);
}

TEST_CASE("unknown keys are warnings, not errors", "[config]") {
  auto r = load_text(R"({"Server": {"Prot": 1, "Admin": {"Tokn": "x"}}, "Logging": {}})", "t.json");
  REQUIRE(r.ok());
  auto has = [&](const std::string& k) {
    return std::any_of(r.warnings.begin(), r.warnings.end(),
                       [&](const std::string& w) { return w.find(k) == 0; });
  };
  CHECK(has("Server.Prot: unknown key"));
  CHECK(has("Server.Admin.Tokn: unknown key"));
  CHECK(has("Logging: unknown key"));
}

TEST_CASE("cluster validation: broker id required, peers well formed and distinct", "[config]") {
  auto r = load_text(R"({"Server": {"Cluster": {"Peers": [
      {"Id": "b2", "Address": "127.0.0.1:9096"}, {"Id": "b2", "Address": "nohost"},
      {"Address": "127.0.0.1:0"}], "Tls": {"Verify": "maybe"},
      "Raft": {"ElectionTimeoutMs": 100, "HeartbeatMs": 200}}}})",
                     "t.json");
  CHECK(has_error_naming(r, "Server.Cluster.BrokerId: required"));
  CHECK(has_error_naming(r, "Server.Cluster.Peers[1].Id: duplicate broker id 'b2'"));
  CHECK(has_error_naming(r, "Server.Cluster.Peers[1].Address: expected host:port"));
  CHECK(has_error_naming(r, "Server.Cluster.Peers[2].Id: required"));
  CHECK(has_error_naming(r, "Server.Cluster.Peers[2].Address"));
  CHECK(has_error_naming(r, "Server.Cluster.Tls.Verify"));
  CHECK(has_error_naming(r, "Server.Cluster.Raft.HeartbeatMs: must be below ElectionTimeoutMs"));
}

TEST_CASE("broker ids are 1 to 64 name characters, in BrokerId and in Peers", "[config]") {
  auto with = [](const std::string& self, const std::string& peer) {
    return load_text(R"({"Server": {"Cluster": {"BrokerId": ")" + self + R"(", "Peers": [{"Id": ")" + peer
                       + R"(", "Address": "127.0.0.1:9096"}]}}})",
                     "t.json");
  };
  const std::string longest(64, 'b');
  CHECK(with(longest, "b2").ok());
  CHECK(with("b1", "broker-2.rack_a").ok());
  auto too_long = with(longest + "x", longest + "y");
  CHECK(has_error_naming(too_long, "Server.Cluster.BrokerId: a broker id is 1 to 64 letters"));
  CHECK(has_error_naming(too_long, "Server.Cluster.Peers[0].Id: a broker id is 1 to 64 letters"));
  auto bad_chars = with("b 1", "b/2");
  CHECK(has_error_naming(bad_chars, "Server.Cluster.BrokerId: a broker id"));
  CHECK(has_error_naming(bad_chars, "Server.Cluster.Peers[0].Id: a broker id"));
}

TEST_CASE("Cluster.Raft.Voters: each voter has an address, each peer votes, and Raft is on", "[config]") {
  auto plain = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Peers": [{"Id": "b2", "Address": "127.0.0.1:9096"}]}}})",
                         "t.json");
  REQUIRE(plain.ok());
  CHECK(plain.config.cluster->raft.enabled);  // on by default

  auto joiner = load_text(R"({"Server": {"Cluster": {"BrokerId": "b4", "Peers": [
      {"Id": "b1", "Address": "127.0.0.1:9096"}, {"Id": "b2", "Address": "127.0.0.1:9097"}],
      "Raft": {"Enabled": true, "Voters": ["b1", "b2"]}}}})",
                          "t.json");
  REQUIRE(joiner.ok());
  CHECK(joiner.config.cluster->raft.voters == std::vector<std::string>{"b1", "b2"});
  auto bad = load_text(R"({"Server": {"Cluster": {"BrokerId": "b4", "Peers": [
      {"Id": "b1", "Address": "127.0.0.1:9096"}, {"Id": "b2", "Address": "127.0.0.1:9097"}],
      "Raft": {"Enabled": true, "Voters": ["b1", "b3", "b1"]}}}})",
                       "t.json");
  CHECK(has_error_naming(bad, "Server.Cluster.Raft.Voters: voter 'b3' is neither this broker nor a configured peer"));
  CHECK(has_error_naming(bad, "Server.Cluster.Raft.Voters: lists a broker twice"));
  CHECK(has_error_naming(bad, "Server.Cluster.Raft.Voters: peer 'b2' is not a voter"));
  auto implied = load_text(R"({"Server": {"Cluster": {"BrokerId": "b4", "Peers": [{"Id": "b1", "Address": "127.0.0.1:9096"}],
      "Raft": {"Voters": ["b1"]}}}})",
                           "t.json");
  CHECK(implied.ok());
  auto off = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"Enabled": false}}}})", "t.json");
  CHECK(has_error_naming(off, "Server.Cluster.Raft.Enabled: false is no longer supported"));
}

TEST_CASE("set overrides parse JSON values and accept paths without Server.", "[config]") {
  auto r = load_text(R"({"Server": {"Port": 8081}})", "t.json",
                     {"Port=9000", "Server.Admin.Token=abc", "Autobalance.DryRun=false",
                      "Autobalance.ExcludedTopics=[\"a\",\"b\"]", "DataDir=/tmp/x y"});
  REQUIRE(r.ok());
  CHECK(r.config.client.port == 9000);
  CHECK(r.config.admin.token == "abc");
  CHECK_FALSE(r.config.autobalance.dry_run);
  CHECK(r.config.autobalance.excluded_topics.size() == 2);
  CHECK(r.config.data_dir == "/tmp/x y");
}

TEST_CASE("a bad set override is validated like the file", "[config]") {
  auto r = load_text("", "defaults", {"Admin.Port=-5", "novalue"});
  CHECK(has_error_naming(r, "--set novalue: expected Dotted.Key=value"));
}

TEST_CASE("the environment overlay overrides the base file key by key", "[config]") {
  moonmq::test::temp_dir dir;
  write(dir.path() + "/appsettings.json", R"({"Server": {"Port": 8081, "Admin": {"Port": 9701, "Token": "a"}}})");
  write(dir.path() + "/appsettings.Production.json", R"({"Server": {"Admin": {"Token": "prod"}}})");
  auto r = load(dir.path() + "/appsettings.json", "Production", {});
  REQUIRE(r.ok());
  CHECK(r.files.size() == 2);
  CHECK(r.config.client.port == 8081);
  CHECK(r.config.admin.port == 9701);
  CHECK(r.config.admin.token == "prod");

  auto without = load(dir.path() + "/appsettings.json", "Staging", {});
  REQUIRE(without.ok());
  CHECK(without.files.size() == 1);
  CHECK(without.config.admin.token == "a");
}

TEST_CASE("a malformed overlay is an error naming the overlay file", "[config]") {
  moonmq::test::temp_dir dir;
  write(dir.path() + "/node.json", R"({"Server": {}})");
  write(dir.path() + "/node.Dev.json", "{ nope");
  auto r = load(dir.path() + "/node.json", "Dev", {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.errors[0].find("node.Dev.json:1:") != std::string::npos);
}

TEST_CASE("a missing config file is an error naming it", "[config]") {
  auto r = load("/nonexistent/appsettings.json", "", {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.errors[0].find("/nonexistent/appsettings.json: cannot read") == 0);
}

TEST_CASE("placement section: defaults and every key bound", "[config][placement]") {
  auto d = load_text("", "t.json");
  REQUIRE(d.ok());
  CHECK(d.config.placement.heartbeat_ms == 5000);
  CHECK(d.config.placement.cpu == "higher");
  CHECK(d.config.placement.overload_cpu == 0.8);
  auto r = load_text(R"({"Server": {"Placement": {"HeartbeatMs": 250, "StaleAfterHeartbeats": 4,
                       "ClientSessionTtlMs": 1000, "SessionWeight": 2, "ByteRateWeight": 0.5, "CpuWeight": 0,
                       "PartitionWeight": 1, "OverloadCpu": 0.9, "OverloadInflowBytesPerSec": 1000,
                       "Cpu": "process", "SpreadClients": false, "Draining": true}}})",
                     "t.json");
  REQUIRE(r.ok());
  CHECK(r.warnings.empty());
  const auto& p = r.config.placement;
  CHECK(p.heartbeat_ms == 250);
  CHECK(p.stale_after_heartbeats == 4);
  CHECK(p.client_session_ttl_ms == 1000);
  CHECK(p.session_weight == 2);
  CHECK(p.byte_rate_weight == 0.5);
  CHECK(p.cpu_weight == 0);
  CHECK(p.partition_weight == 1);
  CHECK(p.overload_cpu == 0.9);
  CHECK(p.overload_inflow_bytes_per_sec == 1000);
  CHECK(p.cpu == "process");
  CHECK_FALSE(p.spread_clients);
  CHECK(p.draining);
}

TEST_CASE("placement section: bad values are errors naming the key", "[config][placement]") {
  auto r = load_text(R"({"Server": {"Placement": {"HeartbeatMs": 0, "SessionWeight": -1, "OverloadCpu": 0,
                       "OverloadInflowBytesPerSec": 0, "Cpu": "gpu", "Draining": "yes"}}})",
                     "t.json");
  CHECK_FALSE(r.ok());
  CHECK(has_error_naming(r, "Server.Placement.HeartbeatMs"));
  CHECK(has_error_naming(r, "Server.Placement.SessionWeight"));
  CHECK(has_error_naming(r, "Server.Placement.OverloadCpu"));
  CHECK(has_error_naming(r, "Server.Placement.OverloadInflowBytesPerSec"));
  CHECK(has_error_naming(r, "Server.Placement.Cpu: expected process, machine or higher, got 'gpu'"));
  CHECK(has_error_naming(r, "Server.Placement.Draining"));
}

// The Kafka listener: a peer's optional KafkaAddress for Metadata.
TEST_CASE("a peer's KafkaAddress is read and must be host:port", "[config]") {
  auto ok = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Peers": [
      {"Id": "b2", "Address": "127.0.0.1:9096", "KafkaAddress": "127.0.0.1:9093"}, {"Id": "b3", "Address": "127.0.0.1:9097"}]}}})",
                      "t.json");
  REQUIRE(ok.ok());
  CHECK(ok.config.cluster->peers[0].kafka_address == "127.0.0.1:9093");
  CHECK(ok.config.cluster->peers[1].kafka_address.empty());
  auto bad = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Peers": [
      {"Id": "b2", "Address": "127.0.0.1:9096", "KafkaAddress": "nohost"}]}}})",
                       "t.json");
  CHECK(has_error_naming(bad, "Server.Cluster.Peers[0].KafkaAddress: expected host:port"));
}

TEST_CASE("Cluster.NumPartitions defaults to 1 and is bounded like a topic's count", "[config]") {
  auto ok = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "NumPartitions": 6}}})", "t.json");
  REQUIRE(ok.ok());
  CHECK(ok.config.cluster->num_partitions == 6);
  auto plain = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})", "t.json");
  REQUIRE(plain.ok());
  CHECK(plain.config.cluster->num_partitions == 1);
  for (const char* bad : {R"({"Server": {"Cluster": {"BrokerId": "b1", "NumPartitions": 0}}})",
                          R"({"Server": {"Cluster": {"BrokerId": "b1", "NumPartitions": 10001}}})"}) {
    auto r = load_text(bad, "t.json");
    CHECK(has_error_naming(r, "Server.Cluster.NumPartitions"));
  }
}

TEST_CASE("Cluster.Rack and Cluster.Weight default to none and 1, and are checked", "[config]") {
  auto plain = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})", "t.json");
  REQUIRE(plain.ok());
  CHECK(plain.config.cluster->rack.empty());
  CHECK(plain.config.cluster->weight == 1.0);
  auto set = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Rack": "eu-west-1a", "Weight": 2.5}}})", "t.json");
  REQUIRE(set.ok());
  CHECK(set.config.cluster->rack == "eu-west-1a");
  CHECK(set.config.cluster->weight == 2.5);
  for (const char* bad : {R"({"Server": {"Cluster": {"BrokerId": "b1", "Weight": 0}}})",
                          R"({"Server": {"Cluster": {"BrokerId": "b1", "Weight": 100.5}}})",
                          R"({"Server": {"Cluster": {"BrokerId": "b1", "Weight": "2"}}})"}) {
    auto r = load_text(bad, "t.json");
    CHECK(has_error_naming(r, "Server.Cluster.Weight"));
  }
  for (const char* bad : {R"({"Server": {"Cluster": {"BrokerId": "b1", "Rack": "rack a"}}})",
                          R"({"Server": {"Cluster": {"BrokerId": "b1", "Rack": 3}}})"}) {
    auto r = load_text(bad, "t.json");
    CHECK(has_error_naming(r, "Server.Cluster.Rack"));
  }
}

TEST_CASE("Cluster.TopicPlacement is spread by default, proposer when set, and nothing else", "[config]") {
  auto plain = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})", "t.json");
  REQUIRE(plain.ok());
  CHECK(plain.config.cluster->topic_placement == "spread");
  auto set = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "TopicPlacement": "proposer"}}})", "t.json");
  REQUIRE(set.ok());
  CHECK(set.config.cluster->topic_placement == "proposer");
  for (const char* bad : {R"({"Server": {"Cluster": {"BrokerId": "b1", "TopicPlacement": "Spread"}}})",
                          R"({"Server": {"Cluster": {"BrokerId": "b1", "TopicPlacement": true}}})"}) {
    auto r = load_text(bad, "t.json");
    CHECK(has_error_naming(r, "Server.Cluster.TopicPlacement"));
  }
}

TEST_CASE("Storage.SharedDir is empty by default and needs a cluster, an absolute path and its own directory",
          "[config]") {
  auto none = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})", "t.json");
  REQUIRE(none.ok());
  CHECK(none.config.broker.shared_dir.empty());
  auto ok = load_text(R"({"Server": {"DataDir": "/var/lib/b1", "Cluster": {"BrokerId": "b1"},
                                      "Storage": {"SharedDir": "/mnt/moonmq"}}})",
                      "t.json");
  REQUIRE(ok.ok());
  CHECK(ok.config.broker.shared_dir == "/mnt/moonmq");
  CHECK(has_error_naming(load_text(R"({"Server": {"Storage": {"SharedDir": "/mnt/moonmq"}}})", "t.json"),
                         "Server.Storage.SharedDir"));
  CHECK(has_error_naming(load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}, "Storage": {"SharedDir": "mnt"}}})",
                                   "t.json"),
                         "Server.Storage.SharedDir"));
  CHECK(has_error_naming(load_text(R"({"Server": {"DataDir": "/d", "Cluster": {"BrokerId": "b1"},
                                                  "Storage": {"SharedDir": "/d"}}})",
                                   "t.json"),
                         "Server.Storage.SharedDir"));
}

TEST_CASE("with Storage.SharedDir the Raft timings a config leaves out default to a fast failover",
          "[config][lease]") {
  auto shared = load_text(R"({"Server": {"DataDir": "/var/lib/b1", "Cluster": {"BrokerId": "b1"},
                                          "Storage": {"SharedDir": "/mnt/moonmq"}}})",
                          "t.json");
  REQUIRE(shared.ok());
  const auto& r = shared.config.cluster->raft;
  CHECK(r.heartbeat_ms == 200);
  CHECK(r.lease_ms == 1000);
  CHECK(r.lease_margin_ms == 100);
  CHECK(r.session_timeout_ms == 2500);
  CHECK(r.election_timeout_ms == 1000);
  CHECK(check_shared_storage_lease(shared.config).empty());
  // Keys the config gives win, in the file or as an override.
  auto given = load_text(R"({"Server": {"DataDir": "/var/lib/b1", "Cluster": {"BrokerId": "b1",
                                          "Raft": {"SessionTimeoutMs": 4000}},
                                          "Storage": {"SharedDir": "/mnt/moonmq"}}})",
                         "t.json", {"Cluster.Raft.LeaseMs=1500"});
  REQUIRE(given.ok());
  CHECK(given.config.cluster->raft.session_timeout_ms == 4000);
  CHECK(given.config.cluster->raft.lease_ms == 1500);
  CHECK(given.config.cluster->raft.heartbeat_ms == 200);
  // Local mode keeps the general defaults.
  auto local = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})", "t.json");
  REQUIRE(local.ok());
  CHECK(local.config.cluster->raft.heartbeat_ms == 500);
  CHECK(local.config.cluster->raft.session_timeout_ms == 9000);
}

TEST_CASE("Cluster.Raft.LeaseMs and LeaseMarginMs: defaults and ranges", "[config][lease]") {
  auto r = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})", "t.json");
  REQUIRE(r.ok());
  CHECK(r.config.cluster->raft.lease_ms == 3000);
  CHECK(r.config.cluster->raft.lease_margin_ms == 500);
  auto set = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"LeaseMs": 10, "LeaseMarginMs": 0}}}})",
                       "t.json");
  REQUIRE(set.ok());
  CHECK(set.config.cluster->raft.lease_ms == 10);
  CHECK(set.config.cluster->raft.lease_margin_ms == 0);
  auto bad = load_text(
    R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"LeaseMs": 9, "LeaseMarginMs": 600001}}}})", "t.json");
  CHECK(has_error_naming(bad, "Server.Cluster.Raft.LeaseMs"));
  CHECK(has_error_naming(bad, "Server.Cluster.Raft.LeaseMarginMs"));
  auto high = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"LeaseMs": 3600001}}}})", "t.json");
  CHECK(has_error_naming(high, "Server.Cluster.Raft.LeaseMs"));
}

TEST_CASE("the lease rules bind only when shared storage checks them", "[config][lease]") {
  using moonmq::config::check_shared_storage_lease;
  // Local mode accepts a SessionTimeoutMs below LeaseMs + LeaseMarginMs (the tests' 2000 ms).
  auto small = load_text(
    R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"SessionTimeoutMs": 2000, "HeartbeatMs": 100}}}})", "t.json");
  REQUIRE(small.ok());
  auto errors = check_shared_storage_lease(small.config);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] == "Server.Cluster.Raft.SessionTimeoutMs: must be at least max(ElectionTimeoutMs, LeaseMs) + "
                     "LeaseMs + LeaseMarginMs (3000 + 3000 + 500 = 6500) with shared storage: a deposed leader can "
                     "echo a broker's answer for up to max(ElectionTimeoutMs, LeaseMs) after the new one started "
                     "counting its silence, got 2000");

  // The defaults hold (9000 >= 6500, 3000 > 500, 500 >= 6).
  auto defaults = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})", "t.json");
  REQUIRE(defaults.ok());
  CHECK(check_shared_storage_lease(defaults.config).empty());

  // Exactly max(ElectionTimeoutMs, LeaseMs) + LeaseMs + LeaseMarginMs is enough; one less is not.
  auto edge = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"SessionTimeoutMs": 6500}}}})", "t.json");
  REQUIRE(edge.ok());
  CHECK(check_shared_storage_lease(edge.config).empty());
  auto below = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"SessionTimeoutMs": 6499}}}})", "t.json");
  REQUIRE(below.ok());
  CHECK(check_shared_storage_lease(below.config).size() == 1);

  // A margin with no room for clock drift: 0, or below LeaseMs / 500.
  auto no_margin = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"LeaseMarginMs": 0}}}})", "t.json");
  REQUIRE(no_margin.ok());
  errors = check_shared_storage_lease(no_margin.config);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] == "Server.Cluster.Raft.LeaseMarginMs: must be at least max(1, LeaseMs / 500) = 6 with shared "
                     "storage (clock-rate drift of 2 * 1e-3 over one lease), got 0");
  auto small_margin = load_text(
    R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"LeaseMs": 10, "HeartbeatMs": 4, "LeaseMarginMs": 1}}}})",
    "t.json");
  REQUIRE(small_margin.ok());
  CHECK(check_shared_storage_lease(small_margin.config).empty());

  // LeaseMs must be above 2 * HeartbeatMs: an idle follower renews from the
  // echo of its answer to the previous heartbeat. 600 over 500 passed the
  // old rule (LeaseMs > HeartbeatMs) and left a follower's lease valid about
  // a fifth of the time (bench/shared/README.md).
  auto short_lease = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"LeaseMs": 600,
      "HeartbeatMs": 500, "LeaseMarginMs": 100, "SessionTimeoutMs": 2000}}}})",
                               "t.json");
  REQUIRE(short_lease.ok());
  errors = check_shared_storage_lease(short_lease.config);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] == "Server.Cluster.Raft.LeaseMs: must be above 2 * HeartbeatMs (1000) with shared storage (a "
                     "follower renews from the echo of its answer to the previous heartbeat), got 600");
  auto twice = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"LeaseMs": 600,
      "HeartbeatMs": 300, "LeaseMarginMs": 100, "SessionTimeoutMs": 2000}}}})",
                         "t.json");
  REQUIRE(twice.ok());
  CHECK(check_shared_storage_lease(twice.config).size() == 1);
  auto above = load_text(R"({"Server": {"Cluster": {"BrokerId": "b1", "Raft": {"LeaseMs": 600,
      "HeartbeatMs": 299, "LeaseMarginMs": 100, "SessionTimeoutMs": 2000}}}})",
                         "t.json");
  REQUIRE(above.ok());
  CHECK(check_shared_storage_lease(above.config).empty());

  // No cluster: no Raft leader to renew a lease.
  auto single = load_text("{}", "t.json");
  REQUIRE(single.ok());
  errors = check_shared_storage_lease(single.config);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].rfind("Server.Cluster: shared storage needs a cluster", 0) == 0);
}
