#include "config/loader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "config/dynamic.hpp"
#include "util/atomic_file.hpp"
#include "util/names.hpp"

namespace moonmq::config {
namespace {

using json = nlohmann::json;

std::string type_name(const json& j) {
  if (j.is_number_integer() || j.is_number_unsigned())
    return "integer";
  if (j.is_number_float())
    return "number";
  return j.type_name();
}

/// Reads one JSON object of the configuration, recording every key it
/// consumes so that the rest can be reported as unknown.
class reader {
public:
  reader(const json* obj, std::string path, load_result& result)
    : obj_(obj), path_(std::move(path)), result_(result) {}

  bool present() const { return obj_ != nullptr; }
  const std::string& path() const { return path_; }

  /// The sub-object `key`; an absent key gives a reader that reads nothing.
  reader child(const std::string& key) {
    const json* j = take(key, false);
    if (j && !j->is_object()) {
      error(key, "expected an object, got " + type_name(*j));
      j = nullptr;
    }
    return reader{j, join(key), result_};
  }

  void get(const std::string& key, std::string& out) {
    if (const json* j = take(key)) {
      if (j->is_string())
        out = j->get<std::string>();
      else
        error(key, "expected a string, got " + type_name(*j));
    }
  }

  void get(const std::string& key, bool& out) {
    if (const json* j = take(key)) {
      if (j->is_boolean())
        out = j->get<bool>();
      else
        error(key, "expected true or false, got " + type_name(*j));
    }
  }

  template <class Int>
  void get_int(const std::string& key, Int& out, int64_t lo, int64_t hi) {
    const json* j = take(key);
    if (!j)
      return;
    if (!j->is_number_integer() && !j->is_number_unsigned()) {
      error(key, "expected an integer, got " + type_name(*j));
      return;
    }
    if (j->is_number_unsigned() && j->get<uint64_t>() > static_cast<uint64_t>(hi)) {
      error(key, "must be at most " + std::to_string(hi));
      return;
    }
    auto v = j->get<int64_t>();
    if (v < lo || v > hi) {
      error(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got "
                   + std::to_string(v));
      return;
    }
    out = static_cast<Int>(v);
  }

  void get_double(const std::string& key, double& out, double lo, double hi) {
    const json* j = take(key);
    if (!j)
      return;
    if (!j->is_number()) {
      error(key, "expected a number, got " + type_name(*j));
      return;
    }
    auto v = j->get<double>();
    if (!std::isfinite(v) || v < lo || v > hi) {
      error(key, "must be between " + fmt(lo) + " and " + fmt(hi) + ", got " + fmt(v));
      return;
    }
    out = v;
  }

  void get_port(const std::string& key, uint16_t& out) { get_int(key, out, 0, 65535); }

  void get_strings(const std::string& key, std::vector<std::string>& out) {
    const json* j = take(key);
    if (!j)
      return;
    if (!j->is_array()) {
      error(key, "expected an array of strings, got " + type_name(*j));
      return;
    }
    out.clear();
    for (size_t i = 0; i < j->size(); ++i) {
      if (!(*j)[i].is_string())
        error(key + "[" + std::to_string(i) + "]", "expected a string");
      else
        out.push_back((*j)[i].get<std::string>());
    }
  }

  /// A reader over an element of an array read with raw().
  reader element(const json& obj, const std::string& key) { return reader{&obj, join(key), result_}; }

  /// Gives raw access to `key` (arrays of objects, free-form maps); marks
  /// it consumed.
  const json* raw(const std::string& key) { return take(key); }

  void error(const std::string& key, const std::string& what) {
    result_.errors.push_back(join(key) + ": " + what);
  }

  /// Reports every key of this object that no get/child consumed.
  void finish() {
    if (!obj_)
      return;
    for (auto it = obj_->begin(); it != obj_->end(); ++it)
      if (!seen_.count(it.key()))
        result_.warnings.push_back(join(it.key()) + ": unknown key, ignored");
  }

  std::string join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

private:
  static std::string fmt(double v) {
    if (v == std::numeric_limits<double>::max())
      return "max";
    auto s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.')
      s.pop_back();
    return s;
  }

  /// Marks `key` consumed and, for a value (`leaf`, not a section), notes
  /// its path in load_result::keys_read whether or not it is set.
  const json* take(const std::string& key, bool leaf = true) {
    seen_.insert(key);
    if (leaf)
      result_.keys_read.insert(join(key));
    if (!obj_)
      return nullptr;
    auto it = obj_->find(key);
    if (it == obj_->end() || it->is_null())
      return nullptr;
    return &*it;
  }

  const json* obj_;
  std::string path_;
  load_result& result_;
  std::set<std::string> seen_;
};

constexpr int64_t max_i32 = std::numeric_limits<int32_t>::max();
constexpr double max_double = std::numeric_limits<double>::max();

void read_listener(reader& r, listener_config& l) {
  r.get("Host", l.host);
  if (r.present() && l.host.empty())
    r.error("Host", "must not be empty");
}

/// Checks "host:port" with a numeric port in 1..65535.
bool valid_address(const std::string& a) {
  auto colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == a.size())
    return false;
  auto port = a.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return false;
  auto n = std::stoi(port);
  return n > 0 && n <= 65535;
}

void read_peers(reader& cluster, cluster_config& c) {
  const json* peers = cluster.raw("Peers");
  if (!peers)
    return;
  if (!peers->is_array()) {
    cluster.error("Peers", "expected an array of objects");
    return;
  }
  std::set<std::string> ids{c.broker_id};
  for (size_t i = 0; i < peers->size(); ++i) {
    std::string key = "Peers[" + std::to_string(i) + "]";
    if (!(*peers)[i].is_object()) {
      cluster.error(key, "expected an object");
      continue;
    }
    reader r = cluster.element((*peers)[i], key);
    peer_config p;
    r.get("Id", p.id);
    r.get("Address", p.address);
    r.get("ClientAddress", p.client_address);
    r.get("Token", p.token);
    r.get("KafkaAddress", p.kafka_address);
    r.finish();
    if (p.id.empty())
      r.error("Id", "required");
    else if (!util::valid_broker_name(p.id))
      r.error("Id", "a broker id is 1 to " + std::to_string(util::max_broker_id_length)
                      + " letters, digits, '.', '_' or '-'");
    else if (!ids.insert(p.id).second)
      r.error("Id", "duplicate broker id '" + p.id + "' (peer ids must differ from each other and from BrokerId)");
    if (!valid_address(p.address))
      r.error("Address", "expected host:port, got '" + p.address + "'");
    if (!p.client_address.empty() && !valid_address(p.client_address))
      r.error("ClientAddress", "expected host:port, got '" + p.client_address + "'");
    if (!p.kafka_address.empty() && !valid_address(p.kafka_address))
      r.error("KafkaAddress", "expected host:port, got '" + p.kafka_address + "'");
    c.peers.push_back(std::move(p));
  }
}

void read_cluster(reader& server, node_config& cfg) {
  reader r = server.child("Cluster");
  if (!r.present())
    return;
  cluster_config c;
  c.port = 9095;
  read_listener(r, c);
  r.get_port("Port", c.port);
  r.get("BrokerId", c.broker_id);
  if (c.broker_id.empty())
    r.error("BrokerId", "required when Cluster is present");
  else if (!util::valid_broker_name(c.broker_id))
    r.error("BrokerId", "a broker id is 1 to " + std::to_string(util::max_broker_id_length)
                          + " letters, digits, '.', '_' or '-'");
  r.get("Token", c.token);
  r.get_int("PeerTimeout", c.peer_timeout_seconds, 1, 3600);
  r.get_int("BatchBytes", c.batch_bytes, 1024, 1LL << 30);
  r.get_int("MoveWindow", c.move_window, 1, 16);
  r.get_int("MoveThrottleBytesPerSec", c.move_throttle_bytes_per_sec, 0, 1LL << 40);
  r.get_int("MaxConcurrentMoves", c.max_concurrent_moves, 1, 64);
  r.get_int("NumPartitions", c.num_partitions, 1, max_num_partitions);
  r.get_int("MoveConfirmTimeoutSeconds", c.move_confirm_timeout_seconds, 0, 86400);
  r.get("Rack", c.rack);
  if (!util::valid_rack_name(c.rack))  // the planner's model files take the same rule
    r.error("Rack", "at most 64 letters, digits, '.', '_' and '-'");
  r.get_double("Weight", c.weight, 0.01, 100.0);
  r.get("TopicPlacement", c.topic_placement);
  if (!valid_topic_placement(c.topic_placement))
    r.error("TopicPlacement", "expected proposer or spread, got '" + c.topic_placement + "'");
  read_peers(r, c);
  reader tls = r.child("Tls");
  tls.get("CertFile", c.tls.cert_file);
  tls.get("KeyFile", c.tls.key_file);
  tls.get("CaFile", c.tls.ca_file);
  tls.get("Verify", c.tls.verify);
  if (c.tls.verify != "none" && c.tls.verify != "peer" && c.tls.verify != "required")
    tls.error("Verify", "expected none, peer or required, got '" + c.tls.verify + "'");
  if (c.tls.cert_file.empty() != c.tls.key_file.empty())
    tls.error("CertFile", "CertFile and KeyFile go together");
  if (c.tls.verify != "none" && c.tls.ca_file.empty())
    tls.error("CaFile", "required when Verify is " + c.tls.verify);
  tls.finish();
  reader raft = r.child("Raft");
  raft.get("Enabled", c.raft.enabled);
  if (!c.raft.enabled)
    raft.error("Enabled", "false is no longer supported: a cluster's topics, brokers, owners and moves live in its "
                          "Raft metadata log (docs/metadata.md); remove the key");
  raft.get_int("ElectionTimeoutMs", c.raft.election_timeout_ms, 10, 600000);
  raft.get_int("HeartbeatMs", c.raft.heartbeat_ms, 1, 600000);
  raft.get_int("MaxLogEntries", c.raft.max_log_entries, 2, 100000000);
  raft.get_int("SessionTimeoutMs", c.raft.session_timeout_ms, 10, 3600000);
  // Their relation to SessionTimeoutMs and HeartbeatMs matters in shared-
  // storage mode only: check_shared_storage_lease().
  raft.get_int("LeaseMs", c.raft.lease_ms, 10, 3600000);
  raft.get_int("LeaseMarginMs", c.raft.lease_margin_ms, 0, 600000);
  if (c.raft.heartbeat_ms >= c.raft.election_timeout_ms)
    raft.error("HeartbeatMs", "must be below ElectionTimeoutMs");
  if (c.raft.session_timeout_ms <= c.raft.heartbeat_ms)
    raft.error("SessionTimeoutMs", "must be above HeartbeatMs");
  raft.get_strings("Voters", c.raft.voters);
  for (const auto& v : c.raft.voters) {
    bool known = v == c.broker_id
                 || std::any_of(c.peers.begin(), c.peers.end(), [&](const peer_config& p) { return p.id == v; });
    if (!known)
      raft.error("Voters", "voter '" + v + "' is neither this broker nor a configured peer (Cluster.Peers gives "
                           "each voter's address)");
  }
  if (!c.raft.voters.empty()) {
    std::set<std::string> unique(c.raft.voters.begin(), c.raft.voters.end());
    if (unique.size() != c.raft.voters.size())
      raft.error("Voters", "lists a broker twice");
    for (const auto& p : c.peers)
      if (!unique.count(p.id))
        raft.error("Voters", "peer '" + p.id + "' is not a voter: list it in Voters, or leave it out of Peers "
                             "(brokers that are not voters are learned from the metadata log)");
  }
  raft.finish();
  r.finish();
  cfg.cluster = std::move(c);
}

void read_goals(reader& ab, autobalance_config& a) {
  const json* goals = ab.raw("Goals");
  if (!goals)
    return;
  if (!goals->is_object()) {
    ab.error("Goals", "expected an object of goal name -> settings");
    return;
  }
  for (auto it = goals->begin(); it != goals->end(); ++it) {
    std::string key = "Goals." + it.key();
    if (!it->is_object()) {
      ab.error(key, "expected an object");
      continue;
    }
    reader r = ab.element(*it, key);
    goal_config g;
    bool enabled = true;
    double dev = 0, threshold = 0, cap = 0;
    int priority = 0;
    auto has = [&](const char* k) { return it->contains(k) && !(*it)[k].is_null(); };
    r.get("Enabled", enabled);
    r.get_double("AvgDeviation", dev, 0.0, goal_avg_deviation_max);
    r.get_double("DetectThreshold", threshold, 0.0, max_double);
    r.get_int("Priority", priority, -goal_priority_bound, goal_priority_bound);
    r.get_double("CapacityThreshold", cap, 0.0, 1.0);
    if (has("Enabled")) g.enabled = enabled;
    if (has("AvgDeviation")) g.avg_deviation = dev;
    if (has("DetectThreshold")) g.detect_threshold = threshold;
    if (has("Priority")) g.priority = priority;
    if (has("CapacityThreshold")) g.capacity_threshold = cap;
    r.finish();
    a.goals[it.key()] = g;
  }
}

void read_autobalance(reader& server, autobalance_config& a) {
  reader r = server.child("Autobalance");
  r.get("Enabled", a.enabled);
  r.get_int("IntervalSeconds", a.interval_seconds, 1, 86400);
  r.get("DryRun", a.dry_run);
  r.get_int("MaxActionsPerDetect", a.max_actions_per_detect, 0, 1000000);
  r.get_int("Window", a.window, 1, 100000);
  r.get_int("MinValid", a.min_valid, 1, 100000);
  r.get_double("Percentile", a.percentile, 0.0, 1.0);
  r.get("GoalsDir", a.goals_dir);
  read_goals(r, a);
  r.get_strings("ExcludedTopics", a.excluded_topics);
  r.get_strings("ExcludedBrokers", a.excluded_brokers);
  r.get_int("ManualMoveCooldownSeconds", a.manual_move_cooldown_seconds, 0, 31LL * 86400);
  r.get_int("AvoidBrokerSeconds", a.avoid_broker_seconds, 0, 31LL * 86400);
  r.get_double("SlowBrokerRatio", a.slow_broker_ratio, 1.5, 1000.0);
  r.get_double("SlowBrokerMinLatencyMs", a.slow_broker_min_latency_ms, 1.0, 600000.0);
  r.get_int("SlowBrokerPasses", a.slow_broker_passes, 1, 1000);
  if (a.min_valid > a.window)
    r.error("MinValid", "must not exceed Window (" + std::to_string(a.window) + ")");
  r.finish();
}

void read_placement(reader& server, placement_config& p) {
  reader r = server.child("Placement");
  r.get_int("HeartbeatMs", p.heartbeat_ms, 10, 3600000);
  r.get_int("StaleAfterHeartbeats", p.stale_after_heartbeats, 1, 1000);
  r.get_int("ClientSessionTtlMs", p.client_session_ttl_ms, 1, 86400000);
  r.get_double("SessionWeight", p.session_weight, 0.0, 1e6);
  r.get_double("ByteRateWeight", p.byte_rate_weight, 0.0, 1e6);
  r.get_double("CpuWeight", p.cpu_weight, 0.0, 1e6);
  r.get_double("PartitionWeight", p.partition_weight, 0.0, 1e6);
  r.get_double("OverloadCpu", p.overload_cpu, 0.0, 1.0);
  if (p.overload_cpu <= 0)
    r.error("OverloadCpu", "must be above 0 (a fraction of the machine in (0, 1])");
  r.get_double("OverloadInflowBytesPerSec", p.overload_inflow_bytes_per_sec, 1.0, 1e15);
  r.get("Cpu", p.cpu);
  if (p.cpu != "process" && p.cpu != "machine" && p.cpu != "higher")
    r.error("Cpu", "expected process, machine or higher, got '" + p.cpu + "'");
  r.get("SpreadClients", p.spread_clients);
  r.get("Draining", p.draining);
  r.finish();
}

void read_server(const json& root, load_result& res) {
  reader top{&root, "", res};
  reader s = top.child("Server");
  top.finish();
  node_config& cfg = res.config;
  read_listener(s, cfg.client);
  s.get_port("Port", cfg.client.port);
  s.get("DataDir", cfg.data_dir);
  if (cfg.data_dir.empty())
    s.error("DataDir", "must not be empty");
  s.get("LogLevel", cfg.log_level);
  if (cfg.log_level != "trace" && cfg.log_level != "debug" && cfg.log_level != "info"
      && cfg.log_level != "warn" && cfg.log_level != "error" && cfg.log_level != "critical"
      && cfg.log_level != "off")
    s.error("LogLevel", "expected trace, debug, info, warn, error, critical or off, got '"
                          + cfg.log_level + "'");

  reader admin = s.child("Admin");
  read_listener(admin, cfg.admin);
  admin.get_port("Port", cfg.admin.port);
  admin.get("Token", cfg.admin.token);
  admin.finish();

  reader kafka = s.child("Kafka");
  kafka.get("Enabled", cfg.kafka.enabled);
  read_listener(kafka, cfg.kafka);
  kafka.get_port("Port", cfg.kafka.port);
  kafka.get("AdvertisedHost", cfg.kafka.advertised_host);
  kafka.get_int("GroupInitialRebalanceDelayMs", cfg.kafka.group_initial_rebalance_delay_ms, 0, 300000);
  kafka.get_int("TransactionalIdExpirationMs", cfg.kafka.transactional_id_expiration_ms, 1000, 31536000000);
  kafka.finish();

  read_cluster(s, cfg);
  read_autobalance(s, cfg.autobalance);
  read_placement(s, cfg.placement);

  reader http = s.child("Http");
  http.get_int("MaxBodyBytes", cfg.http.max_body_bytes, 1024, 1LL << 32);
  http.get_int("HeaderTimeoutMs", cfg.http.header_timeout_ms, 10, 3600000);
  http.get_int("MaxConnections", cfg.http.max_connections, 1, 1000000);
  http.get_int("Threads", cfg.http.threads, 1, 64);
  http.finish();

  reader storage = s.child("Storage");
  storage.get_int("RetentionCheckMs", cfg.broker.retention_check_ms, 10, 86400000);
  storage.get_int("IoThreads", cfg.broker.io_threads, 1, 64);
  storage.get_int("MaxOpenFiles", cfg.broker.max_open_files, 0, 100000000);
  storage.get("WriteAheadLog", cfg.broker.write_ahead_log);
  storage.get_int("WalCheckpointBytes", cfg.broker.wal_checkpoint_bytes, 1LL << 20, 1LL << 40);
  storage.get_int("WalMaxBatchBytes", cfg.broker.wal_max_batch_bytes, 1LL << 10, 1LL << 30);
  storage.get("SharedDir", cfg.broker.shared_dir);
  if (!cfg.broker.shared_dir.empty()) {
    // One mode per cluster, one writer per owner epoch: the owner epochs
    // come from the metadata log, so only a cluster member may use it.
    if (!cfg.cluster)
      storage.error("SharedDir", "needs a Cluster section: owner epochs come from the metadata log");
    if (cfg.broker.shared_dir.front() != '/')
      storage.error("SharedDir", "must be an absolute path (every broker mounts it at the same path)");
    if (cfg.broker.shared_dir == cfg.data_dir)
      storage.error("SharedDir", "must not be DataDir (DataDir keeps this broker's own state)");
  }
  storage.finish();

  reader groups = s.child("Groups");
  groups.get_int("SessionTimeoutMs", cfg.broker.session_timeout_ms, 100, 3600000);
  groups.finish();

  reader sched = s.child("Scheduler");
  sched.get("Policy", cfg.scheduler.policy);
  if (cfg.scheduler.policy != "sharing" && cfg.scheduler.policy != "stealing")
    sched.error("Policy", "expected sharing or stealing, got '" + cfg.scheduler.policy + "'");
  sched.get_int("MaxThreads", cfg.scheduler.max_threads, 0, 256);
  sched.finish();

  s.finish();
}

/// Parses JSON with comments; on a syntax error records "origin:line:col: ...".
bool parse(const std::string& text, const std::string& origin, json& out, load_result& res) {
  try {
    out = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string what = e.what();
    auto pos = what.find("syntax error");
    res.errors.push_back(origin + ":" + std::to_string(line) + ":" + std::to_string(col)
                         + ": malformed JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
    return false;
  }
  if (!out.is_object()) {
    res.errors.push_back(origin + ": expected a JSON object at the top level");
    return false;
  }
  return true;
}

/// Deep merge: objects merge key by key, anything else replaces.
void merge(json& base, const json& overlay) {
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    if (it->is_object() && base.contains(it.key()) && base[it.key()].is_object())
      merge(base[it.key()], *it);
    else
      base[it.key()] = *it;
  }
}

void apply_override(json& root, const std::string& spec, load_result& res) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    res.errors.push_back("--set " + spec + ": expected Dotted.Key=value");
    return;
  }
  std::string path = spec.substr(0, eq), value = spec.substr(eq + 1);
  if (path.rfind("Server.", 0) != 0 && path != "Server")
    path = "Server." + path;
  json* node = &root;
  size_t start = 0;
  for (;;) {
    auto dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) {
      res.errors.push_back("--set " + spec + ": empty key segment");
      return;
    }
    if (!node->is_object())
      *node = json::object();
    node = &(*node)[key];
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  json parsed = json::parse(value, nullptr, /*allow_exceptions=*/false);
  *node = parsed.is_discarded() ? json(value) : parsed;
}

/// With Storage.SharedDir set, the Raft timings a key leaves out default to
/// a failover of about 2.5 s (docs/shared-storage.md "The lease"):
/// HeartbeatMs 200, LeaseMs 1000, LeaseMarginMs 100, SessionTimeoutMs 2500,
/// which pass check_shared_storage_lease with ElectionTimeoutMs up to 1400.
/// Local mode keeps the general defaults (500, 3000, 500, 9000): a fenced
/// broker's partitions wait for it there, so a longer session costs nothing.
void apply_shared_storage_defaults(json& root) {
  auto server = root.find("Server");
  if (server == root.end() || !server->is_object())
    return;
  auto storage = server->find("Storage");
  auto cluster = server->find("Cluster");
  if (storage == server->end() || !storage->is_object() || cluster == server->end() || !cluster->is_object())
    return;
  auto dir = storage->find("SharedDir");
  if (dir == storage->end() || !dir->is_string() || dir->get_ref<const std::string&>().empty())
    return;
  auto& raft = (*cluster)["Raft"];
  if (raft.is_null())
    raft = json::object();
  if (!raft.is_object())
    return;  // read_server reports the wrong type
  for (const auto& [key, value] : {std::pair<const char*, int>{"HeartbeatMs", shared_heartbeat_ms},
                                   {"LeaseMs", shared_lease_ms},
                                   {"LeaseMarginMs", shared_lease_margin_ms},
                                   {"SessionTimeoutMs", shared_session_timeout_ms}})
    if (!raft.contains(key))
      raft[key] = value;
}

load_result finish(json root, std::vector<std::string> files, const std::vector<std::string>& overrides,
                   load_result res) {
  res.files = std::move(files);
  for (const auto& o : overrides)
    apply_override(root, o, res);
  if (res.errors.empty())
    apply_shared_storage_defaults(root);
  if (res.errors.empty())
    read_server(root, res);
  // Shared storage: the lease must end before the controller hands a
  // silent broker's partitions over (docs/shared-storage.md "The lease").
  if (res.errors.empty() && !res.config.broker.shared_dir.empty() && res.config.cluster)
    for (auto& e : check_shared_storage_lease(res.config))
      res.errors.push_back(std::move(e));
  return res;
}

}  // namespace

load_result load_text(const std::string& text, const std::string& origin,
                      const std::vector<std::string>& overrides) {
  load_result res;
  json root = json::object();
  if (!text.empty() && !parse(text, origin, root, res))
    return res;
  return finish(std::move(root), {origin}, overrides, std::move(res));
}

load_result load(const std::string& config_file, const std::string& environment,
                 const std::vector<std::string>& overrides) {
  load_result res;
  json root = json::object();
  std::vector<std::string> files;
  if (!config_file.empty()) {
    std::string text;
    if (auto ec = util::read_file(config_file, text)) {
      res.errors.push_back(config_file + ": cannot read: " + ec.message());
      return res;
    }
    if (!parse(text, config_file, root, res))
      return res;
    files.push_back(config_file);
    if (!environment.empty()) {
      std::filesystem::path p{config_file};
      auto overlay = p.parent_path() / (p.stem().string() + "." + environment + p.extension().string());
      std::string otext;
      if (!util::read_file(overlay.string(), otext)) {
        json o;
        if (!parse(otext, overlay.string(), o, res))
          return res;
        merge(root, o);
        files.push_back(overlay.string());
      }
    }
  }
  return finish(std::move(root), std::move(files), overrides, std::move(res));
}

std::vector<std::string> check_shared_storage_lease(const node_config& cfg) {
  std::vector<std::string> errors;
  if (!cfg.cluster) {
    errors.push_back("Server.Cluster: shared storage needs a cluster: a broker's lease is renewed by the Raft leader "
                     "(docs/shared-storage.md \"The lease\")");
    return errors;
  }
  const auto& r = cfg.cluster->raft;
  // A deposed leader echoes a follower's answers only while its own lease
  // holds and until check-quorum steps it down: for up to max(ElectionTimeoutMs,
  // LeaseMs) after the new leader started counting that follower's silence
  // (docs/shared-storage.md, step 1).
  const int64_t deposed = std::max<int64_t>(r.election_timeout_ms, r.lease_ms);
  int64_t wait = deposed + r.lease_ms + r.lease_margin_ms;
  if (r.session_timeout_ms < wait)
    errors.push_back("Server.Cluster.Raft.SessionTimeoutMs: must be at least max(ElectionTimeoutMs, LeaseMs) + "
                     "LeaseMs + LeaseMarginMs ("
                     + std::to_string(deposed) + " + " + std::to_string(r.lease_ms) + " + "
                     + std::to_string(r.lease_margin_ms) + " = " + std::to_string(wait)
                     + ") with shared storage: a deposed leader can echo a broker's answer for up to "
                       "max(ElectionTimeoutMs, LeaseMs) after the new one started counting its silence, got "
                     + std::to_string(r.session_timeout_ms));
  // Clock-rate drift: two steady clocks may disagree by up to 2 * rho over
  // one lease, rho = 1e-3 (docs/shared-storage.md); and at least 1 ms.
  int64_t margin = std::max<int64_t>(1, (static_cast<int64_t>(r.lease_ms) + 499) / 500);
  if (r.lease_margin_ms < margin)
    errors.push_back("Server.Cluster.Raft.LeaseMarginMs: must be at least max(1, LeaseMs / 500) = "
                     + std::to_string(margin) + " with shared storage (clock-rate drift of 2 * 1e-3 over one "
                     "lease), got " + std::to_string(r.lease_margin_ms));
  // An idle follower renews from the leader's echo of its answer to the
  // previous heartbeat: the echo arrives one HeartbeatMs after the answer's
  // stamp and renews to stamp + LeaseMs, so the lease covers the gap to the
  // next renewal (two heartbeats after that stamp) only if LeaseMs > 2 *
  // HeartbeatMs. Below that it holds (LeaseMs - HeartbeatMs) / HeartbeatMs
  // of the time and the broker refuses its own partitions the rest.
  if (r.lease_ms <= 2 * static_cast<int64_t>(r.heartbeat_ms))
    errors.push_back("Server.Cluster.Raft.LeaseMs: must be above 2 * HeartbeatMs ("
                     + std::to_string(2 * static_cast<int64_t>(r.heartbeat_ms))
                     + ") with shared storage (a follower renews from the echo of its answer to the previous "
                       "heartbeat), got " + std::to_string(r.lease_ms));
  return errors;
}

}  // namespace moonmq::config
