#include "tests/node/move_cluster.hpp"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <thread>

#include <boost/asio.hpp>

#include "tests/support/ports.hpp"

namespace moonmq::test::move {

using namespace std::chrono_literals;

namespace {

}  // namespace

answer call(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
            const transport::header_list& headers) {
  auto r = transport::http_call(port, method, target, body, headers, 30s);
  return {r.status, json::parse(r.body, nullptr, false), r.body.empty() ? r.error : r.body};
}

answer cluster_call(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                    transport::header_list extra) {
  extra.emplace_back("X-Cluster-Token", cluster_token);
  return call(port, method, target, body, extra);
}

move_cluster::move_cluster(std::vector<std::string> ids, std::vector<std::string> common) : common_(std::move(common)) {
  bool has_timeout = false;
  for (const auto& c : common_)
    has_timeout = has_timeout || c.rfind("Cluster.PeerTimeout=", 0) == 0;
  if (!has_timeout)
    common_.push_back("Cluster.PeerTimeout=2");
  for (auto& id : ids) {
    broker b;
    b.id = id;
    b.cluster_port = reserve_port();
    b.client_port = reserve_port();
    b.kafka_port = reserve_port();
    b.dir = std::make_unique<temp_dir>("moonmq-move-" + id);
    b.data_dir = b.dir->path() + "/data";
    brokers_.push_back(std::move(b));
  }
}

move_cluster::~move_cluster() {
  // Stop every running broker by its own pid before the data dirs go.
  for (auto& b : brokers_)
    for (auto& r : b.runs)
      if (r->process().running()) {
        r->process().signal(SIGKILL);
        r->process().wait(10s);
      }
}

void move_cluster::start(size_t i, std::vector<std::string> extra) {
  brokers_[i].extra = std::move(extra);
  restart(i);
}

void move_cluster::restart(size_t i) {
  launch(i, brokers_[i].extra);
  wait_ready(i);
}

void move_cluster::launch(size_t i, std::vector<std::string> extra) {
  auto& b = brokers_[i];
  b.extra = std::move(extra);
  json peers = json::array();
  json voters = json::array();
  for (const auto& p : brokers_)
    if (!p.joiner)
      voters.push_back(p.id);
  for (const auto& p : brokers_)
    if (p.id != b.id && !p.joiner)
      peers.push_back({{"Id", p.id},
                       {"Address", "127.0.0.1:" + std::to_string(p.cluster_port)},
                       {"ClientAddress", "127.0.0.1:" + std::to_string(p.client_port)},
                       {"KafkaAddress", "127.0.0.1:" + std::to_string(p.kafka_port)}});
  std::vector<std::string> overrides{"Cluster.BrokerId=" + b.id,
                                     "Cluster.Port=" + std::to_string(b.cluster_port),
                                     "Cluster.Token=" + std::string(cluster_token),
                                     "Port=" + std::to_string(b.client_port),
                                     "Kafka.Port=" + std::to_string(b.kafka_port),
                                     "DataDir=" + b.data_dir,
                                     "Cluster.Peers=" + peers.dump()};
  if (b.joiner)
    overrides.push_back("Cluster.Raft.Voters=" + voters.dump());
  // Unless a test sets its own Raft timings, the first broker is the one
  // that wins elections (a short timeout against 3 s on the others): the
  // controller, which runs the balance loop, is then known in advance.
  auto sets = [&](const std::string& key) {
    auto has = [&](const std::vector<std::string>& list) {
      return std::any_of(list.begin(), list.end(), [&](const std::string& o) { return o.rfind(key, 0) == 0; });
    };
    return has(common_) || has(b.extra);
  };
  // Unless a test says otherwise, a topic starts on the broker it was
  // created through (TopicPlacement proposer): the tests name its owner.
  if (!sets("Cluster.TopicPlacement="))
    overrides.push_back("Cluster.TopicPlacement=proposer");
  if (!sets("Cluster.Raft.ElectionTimeoutMs=")) {
    overrides.push_back(std::string("Cluster.Raft.ElectionTimeoutMs=") + (i == 0 ? "600" : "3000"));
    if (!sets("Cluster.Raft.HeartbeatMs="))
      overrides.push_back("Cluster.Raft.HeartbeatMs=100");
  }
  overrides.insert(overrides.end(), common_.begin(), common_.end());
  overrides.insert(overrides.end(), b.extra.begin(), b.extra.end());
  b.runs.push_back(std::make_unique<node_process>(*b.dir, overrides));
}

void move_cluster::wait_ready(size_t i) {
  auto& b = brokers_[i];
  auto admin = b.runs.back()->wait_ready(30s);
  if (!admin)
    FAIL("moonmq-node " << b.id << " did not become ready:\n" << b.runs.back()->log());
  b.admin_port = *admin;
}

void move_cluster::kill(size_t i) {
  auto& run = *brokers_[i].runs.back();
  run.process().signal(SIGKILL);
  REQUIRE(run.process().wait(10s) == 128 + SIGKILL);
}

void move_cluster::stop(size_t i) {
  auto& run = *brokers_[i].runs.back();
  run.process().signal(SIGTERM);
  auto rc = run.process().wait(15s);
  INFO(run.log());
  REQUIRE(rc == 0);
}

void move_cluster::signal(size_t i, int sig) { brokers_[i].runs.back()->process().signal(sig); }

bool move_cluster::wait_stopped(size_t i, std::chrono::milliseconds timeout) {
  const auto task_dir = "/proc/" + std::to_string(brokers_[i].runs.back()->process().pid()) + "/task";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool all = true;
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator(task_dir, ec)) {
      // stat: "<tid> (<comm>) <state> ...": the state follows the last ')'.
      auto stat = read_text(t.path().string() + "/stat");
      auto close = stat.rfind(')');
      char state = close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '?';
      all = all && (state == 'T' || state == 't');
    }
    if (ec)
      return false;
    if (all)
      return true;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string move_cluster::logs(size_t i) const {
  std::string out;
  for (size_t r = 0; r < brokers_[i].runs.size(); ++r)
    out += "--- " + brokers_[i].id + " run " + std::to_string(r + 1) + " ---\n" + brokers_[i].runs[r]->log();
  return out;
}

std::string move_cluster::all_logs() const {
  std::string out;
  for (size_t i = 0; i < brokers_.size(); ++i)
    out += logs(i);
  return out;
}

std::vector<std::string> autobalance(bool dry_run, int interval_s, int window, int min_valid) {
  return {"Autobalance.Enabled=true", "Autobalance.DryRun=" + std::string(dry_run ? "true" : "false"),
          "Autobalance.IntervalSeconds=" + std::to_string(interval_s), "Autobalance.Window=" + std::to_string(window),
          "Autobalance.MinValid=" + std::to_string(min_valid),
          // The slow-broker rule never fires here (its own scenario lowers
          // the floor again): these scenarios assert exact moves, and every
          // broker of a test shares one disk, so only a scheduling stall of
          // one process could make it differ.
          "Autobalance.SlowBrokerMinLatencyMs=600000"};
}

std::map<int64_t, sent_record> fill(uint16_t client, const std::string& topic, int partition, int count,
                                    int per_request, size_t value_bytes, const std::string& prefix) {
  std::map<int64_t, sent_record> out;
  transport::http_connection conn{"127.0.0.1", client};
  int n = 0;
  while (n < count) {
    json records = json::array();
    std::vector<sent_record> batch;
    for (int k = 0; k < per_request && n < count; ++k, ++n) {
      sent_record r{prefix + "-" + std::to_string(n), prefix + "-" + std::to_string(n) + "-"};
      // Values differ record by record so that a shifted offset cannot match.
      while (r.value.size() < value_bytes)
        r.value += static_cast<char>('a' + (r.value.size() * 7 + static_cast<size_t>(n)) % 26);
      records.push_back({{"key", r.key}, {"value", r.value}, {"partition", partition}});
      batch.push_back(std::move(r));
    }
    auto res = conn.call("POST", "/v1/topics/" + topic + "/records?acks=leader", json{{"records", records}}.dump(), 60s);
    INFO(res.body << res.error);
    REQUIRE(res.status == 200);
    auto offsets = json::parse(res.body)["offsets"];
    REQUIRE(offsets.size() == batch.size());
    for (size_t k = 0; k < batch.size(); ++k)
      out[offsets[k]["offset"].get<int64_t>()] = batch[k];
  }
  return out;
}

partition_read read_partition(uint16_t client, const std::string& topic, int partition) {
  partition_read out;
  transport::http_connection conn{"127.0.0.1", client};
  std::string base = "/v1/topics/" + topic + "/partitions/" + std::to_string(partition) + "/records?max_records=10000";
  int64_t next = -1;
  for (;;) {
    auto res = conn.call("GET", next < 0 ? base : base + "&offset=" + std::to_string(next), {}, 30s);
    INFO(res.body << res.error);
    REQUIRE(res.status == 200);
    auto page = json::parse(res.body);
    if (out.log_start < 0) {
      out.log_start = page["log_start_offset"].get<int64_t>();
      next = out.log_start;
    }
    out.log_end = page["log_end_offset"].get<int64_t>();
    for (auto& r : page["records"]) {
      auto off = r["offset"].get<int64_t>();
      REQUIRE(off == next);  // contiguous
      out.records[off] = r;
      ++next;
    }
    REQUIRE(page["next_offset"].get<int64_t>() == next);
    if (next >= out.log_end)
      return out;
    REQUIRE(!page["records"].empty());
  }
}

void create_topic(uint16_t client, const std::string& topic, int partitions, const json& config) {
  json body{{"name", topic}, {"partitions", partitions}};
  if (!config.is_null())
    body["config"] = config;
  auto a = call(client, "POST", "/v1/topics", body.dump());
  INFO(a.raw);
  REQUIRE((a.status == 201 || a.status == 200));
}

json submit_move(uint16_t admin, const std::string& topic, int partition, const std::string& to,
                 const std::string& reason) {
  json body{{"version", 1}, {"partitions", {{{"topic", topic}, {"partition", partition}, {"replicas", {to}}}}}};
  if (!reason.empty())
    body["reason"] = reason;
  auto a = call(admin, "POST", "/admin/reassignments", body.dump());
  INFO(a.raw);
  REQUIRE(a.status == 202);
  REQUIRE(a.body.is_object());
  REQUIRE(a.body["accepted"].is_array());
  REQUIRE(a.body["rejected"].is_array());
  return a.body;
}

json reassignments(uint16_t admin) {
  auto a = call(admin, "GET", "/admin/reassignments");
  INFO(a.raw);
  REQUIRE(a.status == 200);
  REQUIRE(a.body["reassignments"].is_array());
  return a.body["reassignments"];
}

json latest_row(uint16_t admin, const std::string& topic, int partition, const std::string& from) {
  json best;
  for (auto& r : reassignments(admin)) {
    if (r.value("topic", "") != topic || r.value("partition", -1) != partition || r.value("from", "") != from)
      continue;
    if (best.is_null() || r.value("started_ms", int64_t{0}) > best.value("started_ms", int64_t{0})
        || (r.value("started_ms", int64_t{0}) == best.value("started_ms", int64_t{0})
            && r.value("move_id", "") > best.value("move_id", "")))
      best = r;
  }
  return best;
}

bool is_terminal(const std::string& state) {
  return state == "done" || state == "failed" || state == "cancelled";
}

json wait_move(uint16_t admin, const std::string& topic, int partition, const std::string& from,
               const std::set<std::string>& states, std::chrono::milliseconds timeout) {
  json row;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    row = latest_row(admin, topic, partition, from);
    if (!row.is_null()) {
      auto s = row.value("state", "");
      if (states.count(s) || is_terminal(s))
        return row;
    }
    std::this_thread::sleep_for(50ms);
  }
  return json{};
}

producer::producer(uint16_t client, std::string topic, int partition, int per_request, std::string prefix)
    : client_(client), topic_(std::move(topic)), partition_(partition), per_request_(per_request),
      prefix_(std::move(prefix)) {
  thread_ = std::make_unique<std::thread>([this] { run(); });
}

producer::~producer() { stop(); }

void producer::stop() {
  stop_ = true;
  if (thread_ && thread_->joinable())
    thread_->join();
}

void producer::run() {
  transport::http_connection conn{"127.0.0.1", client_};
  int n = 0;
  while (!stop_) {
    json records = json::array();
    std::vector<sent_record> batch;
    for (int k = 0; k < per_request_; ++k, ++n) {
      sent_record r{prefix_ + "-" + std::to_string(n), prefix_ + "-value-" + std::to_string(n)};
      records.push_back({{"key", r.key}, {"value", r.value}, {"partition", partition_}});
      batch.push_back(std::move(r));
    }
    auto res = conn.call("POST", "/v1/topics/" + topic_ + "/records?acks=leader", json{{"records", records}}.dump(), 30s);
    if (res.status != 200) {
      ++failed_;
      std::lock_guard lock{mu_};
      if (errors_.size() < 20)
        errors_.push_back(std::to_string(res.status) + " " + res.body + res.error);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    auto offsets = json::parse(res.body, nullptr, false);
    std::lock_guard lock{mu_};
    if (!offsets.is_object() || offsets["offsets"].size() != batch.size()) {
      ++failed_;
      errors_.push_back("malformed answer: " + res.body);
      continue;
    }
    ++ok_;
    for (size_t k = 0; k < batch.size(); ++k) {
      auto off = offsets["offsets"][k]["offset"].get<int64_t>();
      if (!acked_.emplace(off, batch[k]).second)
        double_acks_.push_back(off);
    }
  }
}

std::map<int64_t, sent_record> producer::acked() const {
  std::lock_guard lock{mu_};
  return acked_;
}

std::vector<int64_t> producer::double_acks() const {
  std::lock_guard lock{mu_};
  return double_acks_;
}

std::vector<std::string> producer::errors() const {
  std::lock_guard lock{mu_};
  return errors_;
}

/// What broker `i` believes about the controller (GET /admin/cluster).
std::optional<belief> belief_of(move_cluster& c, size_t i) {
  auto j = call(c.admin(i), "GET", "/admin/cluster").body;
  if (!j.is_object() || !j.contains("raft") || !j["controller"]["id"].is_string())
    return std::nullopt;
  return belief{j["controller"].value("term", int64_t{0}), j["controller"]["id"].get<std::string>(),
                j["raft"].value("role", std::string{})};
}

/// Polls brokers `live` until they name the same leader (one of them, which
/// says it leads) at a term above `above`: (leader index, term).
std::optional<std::pair<size_t, int64_t>> agreed_leader(move_cluster& c, const std::vector<size_t>& live,
                                                        int64_t above, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::optional<belief> first;
    bool agree = true;
    for (auto i : live) {
      auto b = belief_of(c, i);
      if (!b || b->term <= above || (first && (b->leader != first->leader || b->term != first->term))) {
        agree = false;
        break;
      }
      if (!first)
        first = b;
    }
    if (agree && first)
      for (auto i : live)
        if (c.id(i) == first->leader) {
          auto b = belief_of(c, i);
          if (b && b->role == "leader")
            return std::make_pair(i, first->term);
        }
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

}  // namespace moonmq::test::move
