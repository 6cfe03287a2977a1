// metadata_propagation_bench: how fast the metadata log reaches every broker
// of a real 3-broker moonmq cluster with Cluster.Raft on loopback (the two
// propagation aims of the metadata log, docs/metadata.md).
//
//   metadata_propagation_bench [--proposals 200] [--topics 12] [--topics-per-cluster 4]
//                              [--partitions 1000] [--poll-us 200] [--retry-us 1000]
//                              [--election-ms 1000] [--heartbeat-ms 500] [--log-level debug]
//                              [--keep] [--node PATH] [--dir D]
//
// 1. Propose -> applied on every broker (aim: p99 <= 20 ms). `--proposals`
//    owner entries for a topic that never exists, POSTed one at a time to
//    the leader's /cluster/raft/propose (answered once committed and applied
//    on the leader). Observed two ways:
//    (a) polled: one thread per broker, each on a keep-alive connection to
//        its admin port, reads `applied_index` from GET /admin/actors/<id of
//        raft_node> every `--poll-us` µs from the moment the proposal is
//        sent; a broker's time is the first poll that sees the entry's
//        index applied (the status is published right after the image).
//        Resolution: one poll round trip plus `--poll-us` (printed);
//    (b) from the brokers' logs: the `raft.applied index=N` line each broker
//        writes when it applies the entry (millisecond stamps, truncated:
//        a figure can read up to 1 ms low). Taken for the polled proposals
//        and for a second series without any polling (50 ms apart), which
//        shows what the polling itself costs.
//    The series runs on the first cluster before any topic exists, and again
//    on the last cluster once it holds `--topics-per-cluster` topics (a
//    larger image is rebuilt at every apply).
// 2. A `--partitions`-partition topic usable through every broker (aim: <=
//    1 s after the create returns). POST /v1/topics at one broker (rotating
//    b1, b2, b3 over the runs); once it answers 201, every broker gets four
//    threads on keep-alive client connections, started together: three
//    produce one record (acks=leader) to partition 0, P/2-1 and P-1 each,
//    and one produces one request of P records, one per partition (the
//    sweep); each retries every `--retry-us` µs until it answers 200. A
//    run's figure is the slowest broker. Beside it: the brokers' log stamps
//    of applying the entry (`raft.applied`), of the local copy's creation
//    (`topic.adopted`: every partition actor spawned, catalogue saved) and
//    of the last partition log opened (`partition.opened`, a debug line,
//    hence the default `--log-level debug`), relative to the answer, and
//    the same produces on the ready topic (their own floor). Before the
//    next run every broker has opened every partition log of this one (its
//    partition.opened lines) and 1 s has passed. Topics cannot be deleted
//    and every partition is a thread, so a fresh cluster is started every
//    `--topics-per-cluster` topics.
//
// Data under <dir>/metadata-propagation-bench-<pid>, removed at the end
// unless --keep (kept when a run fails). Figures, never a pass/fail.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/latency_stats.hpp"
#include "bench/common/node_options.hpp"
#include "bench/common/raft_cluster.hpp"
#include "net/blocking_client.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using sys_clock = std::chrono::system_clock;
using namespace std::chrono_literals;
using moonmq::bench::max_of;
using moonmq::bench::percentile;
using moonmq::bench::raft_cluster;
using moonmq::transport::http_connection;

const char* usage =
  "metadata_propagation_bench [--proposals N] [--topics N] [--topics-per-cluster N] [--partitions P]\n"
  "                           [--poll-us US] [--retry-us US] [--election-ms MS] [--heartbeat-ms MS]\n"
  "                           [--log-level debug|info] [--keep] [--node PATH] [--dir D]\n"
  "  Times propose -> applied on every broker, and create -> a P-partition topic usable through\n"
  "  every broker, on a local 3-broker cluster with Cluster.Raft.\n";

struct options : moonmq::bench::node_options {
  int proposals = 200;
  int topics = 12;
  int topics_per_cluster = 4;
  int partitions = 1000;
  int poll_us = 200;
  int retry_us = 1000;
  int election_ms = 1000;  ///< Cluster.Raft defaults (config/node_config.hpp)
  int heartbeat_ms = 500;
  std::string log_level = "debug";  ///< debug: partition.opened stamps
  bool keep = false;
};

/// The aims of the metadata log (issue "One cluster metadata log", section Performance).
constexpr double apply_aim_ms = 20;
constexpr double usable_aim_ms = 1000;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double ms_between(sys_clock::time_point a, sys_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// The samples that exist (a log stamp that was not found is NaN).
std::vector<double> finite(const std::vector<double>& v) {
  std::vector<double> out;
  std::copy_if(v.begin(), v.end(), std::back_inserter(out), [](double x) { return std::isfinite(x); });
  return out;
}

/// "p50 … ms, p99 … ms, max … ms (aim A ms, p99 R x)" of samples in ms.
void print_against(const char* what, const std::vector<double>& all, double aim) {
  auto ms = finite(all);
  auto p99 = percentile(ms, 0.99);
  std::printf("  %-46s n=%-4zu p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms  (aim %.0f ms, p99 %.2fx)\n", what,
              ms.size(), percentile(ms, 0.5), p99, max_of(ms), aim, p99 / aim);
}

void print_plain(const char* what, const std::vector<double>& all) {
  auto ms = finite(all);
  std::printf("  %-46s n=%-4zu p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", what, ms.size(), percentile(ms, 0.5),
              percentile(ms, 0.99), max_of(ms));
}

// --- node logs --------------------------------------------------------------------

/// The stamp "YYYY-MM-DDTHH:MM:SS.mmm" (local time, util/logging.cpp) at the
/// start of a log line.
std::optional<sys_clock::time_point> line_time(const std::string& line) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(line.c_str(), "%d-%d-%dT%d:%d:%d.%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &ms)
      != 7)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_isdst = -1;
  return sys_clock::from_time_t(std::mktime(&tm)) + std::chrono::milliseconds(ms);
}

/// What one broker's node.log says: when it applied each entry and when its
/// local copy of each topic was made.
struct log_marks {
  std::map<int64_t, sys_clock::time_point> applied;             ///< raft index -> raft.applied
  std::map<std::string, sys_clock::time_point> topic_applied;   ///< topic -> raft.applied of its create
  std::map<std::string, sys_clock::time_point> adopted;         ///< topic -> topic.adopted
  std::map<std::string, sys_clock::time_point> last_opened;     ///< topic -> its last partition.opened (debug)
  std::map<std::string, int> opened;                            ///< topic -> partition.opened lines
};

log_marks read_marks(const std::string& path) {
  log_marks m;
  auto text = moonmq::bench::read_text(path);
  size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    auto t = line_time(line);
    if (!t)
      continue;
    if (auto p = line.find("raft.applied index="); p != std::string::npos) {
      auto index = std::atoll(line.c_str() + p + 19);
      m.applied.emplace(index, *t);
      if (auto q = line.find("entry=\"topic "); q != std::string::npos) {
        auto name = line.substr(q + 13, line.find(' ', q + 13) - (q + 13));
        m.topic_applied.emplace(name, *t);
      }
    } else if (auto a = line.find("topic.adopted topic="); a != std::string::npos) {
      auto name = line.substr(a + 20, line.find(' ', a + 20) - (a + 20));
      m.adopted.emplace(name, *t);
    } else if (auto o = line.find("partition.opened topic="); o != std::string::npos) {
      auto name = line.substr(o + 23, line.find(' ', o + 23) - (o + 23));
      auto& last = m.last_opened[name];
      last = std::max(last, *t);
      ++m.opened[name];
    }
  }
  return m;
}

// --- 1. propose -> applied -----------------------------------------------------------

/// Polls one broker's raft_node status for the applied index, one round per
/// proposal, on one keep-alive admin connection.
class applied_poller {
public:
  applied_poller(uint16_t admin_port, std::string actor_path, int poll_us)
      : conn_("127.0.0.1", admin_port), path_(std::move(actor_path)), poll_(poll_us) {
    if (applied() < 0)
      throw std::runtime_error("cannot read applied_index from " + path_);
    thread_ = std::thread([this] { run(); });
  }
  ~applied_poller() {
    {
      std::lock_guard<std::mutex> g{mtx_};
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  applied_poller(const applied_poller&) = delete;
  applied_poller& operator=(const applied_poller&) = delete;

  /// Starts polling now; the index to wait for is told by `until` later.
  void arm() {
    {
      std::lock_guard<std::mutex> g{mtx_};
      target_ = -1;
      seen_.reset();
      first_.clear();
      armed_ = true;
    }
    cv_.notify_all();
  }

  /// Tells the index to wait for and blocks until a poll saw it applied
  /// (or `timeout`): when the first such poll was answered, or nullopt.
  std::optional<clock_type::time_point> until(int64_t index, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> g{mtx_};
    target_ = index;
    for (const auto& [value, t] : first_)
      if (value >= index) {
        seen_ = t;
        break;
      }
    cv_.wait_for(g, timeout, [&] { return seen_.has_value(); });
    armed_ = false;
    return seen_;
  }

  /// Mean round trip of one poll so far (ms).
  double mean_poll_ms() const { return polls_ ? poll_ms_ / static_cast<double>(polls_) : 0.0; }
  int64_t polls() const { return polls_; }

private:
  /// The applied index in the status, -1 when it cannot be read.
  int64_t applied() {
    auto r = conn_.call("GET", path_, "", 2s);
    auto p = r.body.find("\"applied_index\":");
    return r.status == 200 && p != std::string::npos ? std::atoll(r.body.c_str() + p + 16) : -1;
  }

  void run() {
    std::unique_lock<std::mutex> g{mtx_};
    while (!quit_) {
      cv_.wait(g, [&] { return quit_ || (armed_ && !seen_); });
      if (quit_)
        break;
      g.unlock();
      auto sent = clock_type::now();
      auto value = applied();
      auto answered = clock_type::now();
      g.lock();
      poll_ms_ += ms_between(sent, answered);
      ++polls_;
      // The entry may have been applied at any moment of the round trip:
      // its answer is the earliest time the poll can vouch for.
      if (value >= 0 && (first_.empty() || first_.back().first < value))
        first_.emplace_back(value, answered);
      if (target_ >= 0 && value >= target_ && !seen_) {
        seen_ = answered;
        cv_.notify_all();
        continue;
      }
      g.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(poll_));
      g.lock();
    }
  }

  http_connection conn_;
  std::string path_;
  int poll_;
  std::mutex mtx_;
  std::condition_variable cv_;
  bool quit_ = false;
  bool armed_ = false;
  int64_t target_ = -1;
  std::optional<clock_type::time_point> seen_;
  std::vector<std::pair<int64_t, clock_type::time_point>> first_;  ///< each new value and when it was first seen
  double poll_ms_ = 0;
  int64_t polls_ = 0;
  std::thread thread_;
};

/// The admin path of broker `i`'s raft_node status: /admin/actors/<id>.
std::string raft_actor_path(const raft_cluster& c, size_t i) {
  auto r = moonmq::transport::http_call(c.admin_ports[i], "GET", "/admin/actors", "", {}, 5s);
  auto j = json::parse(r.body, nullptr, false);
  if (r.status == 200 && j.is_object() && j["actors"].is_array())
    for (const auto& a : j["actors"])
      if (a.value("kind", std::string{}) == "raft_node")
        return "/admin/actors/" + std::to_string(a["id"].get<uint64_t>());
  throw std::runtime_error(c.ids[i] + ": no raft_node in GET /admin/actors: " + r.body);
}

/// The broker whose raft_node says it leads (from the statuses at `paths`),
/// or `fallback` when none does.
size_t current_leader(const raft_cluster& c, const std::vector<std::string>& paths, size_t fallback) {
  for (size_t i = 0; i < c.ids.size(); ++i) {
    auto r = moonmq::transport::http_call(c.admin_ports[i], "GET", paths[i], "", {}, 5s);
    auto j = json::parse(r.body, nullptr, false);
    if (r.status == 200 && j.is_object() && j["state"].is_object() && j["state"].value("role", "") == "leader")
      return i;
  }
  return fallback;
}

struct proposal {
  int64_t index = 0;
  sys_clock::time_point sent_sys;
  double committed_ms = 0;          ///< the leader's answer
  std::vector<double> polled_ms;    ///< per broker; empty without polling
};

/// Proposes `n` owner entries one at a time to the leader; with `pollers`
/// times each until every broker's poll sees it applied, without them waits
/// `gap` after each answer.
std::vector<proposal> propose_series(const raft_cluster& c, size_t leader, int n, int salt,
                                     std::vector<std::unique_ptr<applied_poller>>* pollers,
                                     std::chrono::milliseconds gap) {
  std::vector<proposal> out;
  for (int k = 0; k < n; ++k) {
    json body{{"topic", "propagation-probe"}, {"partition", (salt + k) % 64}, {"owner", c.ids[static_cast<size_t>(salt + k) % c.ids.size()]}};
    if (pollers)
      for (auto& p : *pollers)
        p->arm();
    proposal pr;
    pr.sent_sys = sys_clock::now();
    auto t0 = clock_type::now();
    auto r = moonmq::transport::http_call(c.cluster_ports[leader], "POST", "/cluster/raft/propose", body.dump(),
                                          {{"X-Cluster-Token", raft_cluster::token}}, 10s);
    pr.committed_ms = moonmq::bench::ms_since(t0);
    auto j = json::parse(r.body, nullptr, false);
    if (r.status != 200 || !j.is_object() || !j["index"].is_number_integer())
      throw std::runtime_error("proposal " + std::to_string(k) + ": HTTP " + std::to_string(r.status) + " " + r.body
                               + r.error);
    pr.index = j["index"].get<int64_t>();
    if (pollers) {
      for (auto& p : *pollers) {
        auto seen = p->until(pr.index, 10s);
        if (!seen)
          throw std::runtime_error("index " + std::to_string(pr.index) + " not applied on every broker in 10 s");
        pr.polled_ms.push_back(ms_between(t0, *seen));
      }
    } else {
      std::this_thread::sleep_for(gap);
    }
    out.push_back(std::move(pr));
  }
  return out;
}

/// Per proposal, the slowest broker's log stamp of applying it, in ms after
/// it was sent (entries some log lacks are skipped).
std::vector<double> logged_apply_ms(const std::vector<proposal>& series, const std::vector<log_marks>& marks) {
  std::vector<double> out;
  for (const auto& pr : series) {
    double worst = 0;
    bool all = true;
    for (const auto& m : marks) {
      auto it = m.applied.find(pr.index);
      if (it == m.applied.end()) {
        all = false;
        break;
      }
      worst = std::max(worst, ms_between(pr.sent_sys, it->second));
    }
    if (all)
      out.push_back(worst);
  }
  return out;
}

/// Prints series 1 on cluster `c` (`label` says which image it ran on).
void run_apply_series(const raft_cluster& c, const std::vector<std::string>& paths, size_t leader, const options& o,
                      const char* label, int salt) {
  std::vector<std::unique_ptr<applied_poller>> pollers;
  for (size_t i = 0; i < c.ids.size(); ++i)
    pollers.push_back(std::make_unique<applied_poller>(c.admin_ports[i], paths[i], o.poll_us));
  auto polled = propose_series(c, leader, o.proposals, salt, &pollers, 0ms);
  double poll_rtt = 0;
  int64_t polls = 0;
  for (auto& p : pollers) {
    poll_rtt = std::max(poll_rtt, p->mean_poll_ms());
    polls += p->polls();
  }
  pollers.clear();
  auto quiet = propose_series(c, leader, o.proposals, salt + o.proposals, nullptr, 50ms);
  std::this_thread::sleep_for(200ms);  // the last entry's log lines
  std::vector<log_marks> marks;
  for (size_t i = 0; i < c.ids.size(); ++i)
    marks.push_back(read_marks(c.log_path(i)));

  std::vector<double> everywhere, committed, follower_lag;
  for (const auto& pr : polled) {
    everywhere.push_back(*std::max_element(pr.polled_ms.begin(), pr.polled_ms.end()));
    committed.push_back(pr.committed_ms);
    for (size_t i = 0; i < pr.polled_ms.size(); ++i)
      if (i != leader)
        follower_lag.push_back(pr.polled_ms[i] - pr.committed_ms);
  }
  std::vector<double> quiet_committed;
  for (const auto& pr : quiet)
    quiet_committed.push_back(pr.committed_ms);
  std::printf("\n1. propose -> applied on every broker (%s; leader %s; owner entries, one at a time)\n", label,
              c.ids[leader].c_str());
  std::printf("   polling every %d us; a poll's round trip averaged %.3f ms (%lld polls): resolution about %.2f ms\n",
              o.poll_us, poll_rtt, static_cast<long long>(polls), poll_rtt + o.poll_us / 1000.0);
  print_against("applied on all 3 (polled)", everywhere, apply_aim_ms);
  print_against("applied on all 3 (log stamps, same proposals)", logged_apply_ms(polled, marks), apply_aim_ms);
  print_against("applied on all 3 (log stamps, no polling)", logged_apply_ms(quiet, marks), apply_aim_ms);
  print_plain("leader answered (committed + applied there)", committed);
  print_plain("  same, without polling", quiet_committed);
  print_plain("follower applied after the leader answered", follower_lag);
}

// --- 2. a topic usable through every broker ---------------------------------------------

/// One produce loop started once the create answered: retries `body` until 200.
struct prober {
  size_t broker = 0;
  int partition = -1;  ///< -1: the sweep of every partition
  std::string body;
  double ok_ms = -1;   ///< since the create answered; -1 when it never succeeded
  int attempts = 0;
  std::map<std::string, int> refusals;  ///< "404 unknown_topic" -> count
};

std::string one_record(int partition) {
  return json{{"records", json::array({{{"value", "p"}, {"partition", partition}}})}}.dump();
}

std::string sweep_body(int partitions) {
  auto list = json::array();
  for (int p = 0; p < partitions; ++p)
    list.push_back({{"value", "s"}, {"partition", p}});
  return json{{"records", list}}.dump();
}

struct topic_run {
  std::string topic;
  size_t creator = 0;
  bool creator_leads = false;
  double create_ms = 0;                    ///< POST /v1/topics, sent to answered
  int create_status = 0;                   ///< 201, or 504 when it outlasted the node's request bound
  std::vector<prober> probes;              ///< 4 per broker
  sys_clock::time_point sent_sys, answered_sys;
  std::vector<double> ready_produce_ms;    ///< per broker: one record, topic ready
  std::vector<double> ready_sweep_ms;      ///< per broker: the sweep, topic ready
  std::vector<double> applied_ms, adopted_ms, opened_ms;  ///< per broker, log stamps after the answer (NaN: missing)

  double usable_ms(size_t b, bool sweep) const {
    double worst = 0;
    for (const auto& p : probes)
      if (p.broker == b && (p.partition < 0) == sweep)
        worst = p.ok_ms < 0 ? 1e9 : std::max(worst, p.ok_ms);
    return worst;
  }
};

topic_run run_topic(const raft_cluster& c, size_t creator, size_t leader, const std::string& topic,
                    const options& o) {
  topic_run run;
  run.topic = topic;
  run.creator = creator;
  run.creator_leads = creator == leader;
  auto sweep = sweep_body(o.partitions);
  for (size_t b = 0; b < c.ids.size(); ++b)
    for (int p : {0, o.partitions / 2 - 1, o.partitions - 1, -1}) {
      prober pr;
      pr.broker = b;
      pr.partition = p;
      pr.body = p < 0 ? sweep : one_record(p);
      run.probes.push_back(std::move(pr));
    }

  std::mutex mtx;
  std::condition_variable cv;
  bool go = false;
  clock_type::time_point answered;
  std::atomic<int> warm{0};
  std::vector<std::thread> threads;
  for (auto& pr : run.probes)
    threads.emplace_back([&, pr = &pr] {
      http_connection conn{"127.0.0.1", c.client_ports[pr->broker]};
      conn.call("GET", "/v1/topics", "", 5s);  // the connection is open before the create
      ++warm;
      {
        std::unique_lock<std::mutex> g{mtx};
        cv.wait(g, [&] { return go; });
      }
      auto target = "/v1/topics/" + topic + "/records?acks=leader";
      auto deadline = answered + 60s;
      while (clock_type::now() < deadline) {
        ++pr->attempts;
        auto r = conn.call("POST", target, pr->body, 30s);
        if (r.status == 200) {
          pr->ok_ms = ms_between(answered, clock_type::now());
          return;
        }
        auto j = json::parse(r.body, nullptr, false);
        auto code = j.is_object() && j["error"].is_string() ? j["error"].get<std::string>() : r.error;
        ++pr->refusals[std::to_string(r.status) + " " + code];
        std::this_thread::sleep_for(std::chrono::microseconds(o.retry_us));
      }
    });
  while (warm < static_cast<int>(threads.size()))
    std::this_thread::sleep_for(1ms);

  run.sent_sys = sys_clock::now();
  auto t0 = clock_type::now();
  auto r = moonmq::transport::http_call(c.client_ports[creator], "POST", "/v1/topics",
                                        json{{"name", topic}, {"partitions", o.partitions}}.dump(), {}, 60s);
  {
    std::lock_guard<std::mutex> g{mtx};
    answered = clock_type::now();
    run.answered_sys = sys_clock::now();
    go = true;
  }
  cv.notify_all();
  run.create_ms = ms_between(t0, answered);
  for (auto& t : threads)
    t.join();
  run.create_status = r.status;
  // 504: the node's request bound passed while the local copy was made;
  // the topic exists (docs/client-api.md), so the run goes on, marked.
  if (r.status != 201 && r.status != 504)
    throw std::runtime_error("create " + topic + " at " + c.ids[creator] + ": HTTP " + std::to_string(r.status) + " "
                             + r.body + r.error);

  // The same produces on the ready topic: what the retry loops cannot beat.
  for (size_t b = 0; b < c.ids.size(); ++b) {
    http_connection conn{"127.0.0.1", c.client_ports[b]};
    auto target = "/v1/topics/" + topic + "/records?acks=leader";
    conn.call("POST", target, one_record(0), 30s);
    auto t = clock_type::now();
    conn.call("POST", target, one_record(0), 30s);
    run.ready_produce_ms.push_back(moonmq::bench::ms_since(t));
    t = clock_type::now();
    auto s = conn.call("POST", target, sweep, 30s);
    run.ready_sweep_ms.push_back(s.status == 200 ? moonmq::bench::ms_since(t) : -1);
  }
  return run;
}

/// Fills the log stamps of `runs` from the cluster's node logs.
void add_log_stamps(const raft_cluster& c, std::vector<topic_run>& runs) {
  std::vector<log_marks> marks;
  for (size_t i = 0; i < c.ids.size(); ++i)
    marks.push_back(read_marks(c.log_path(i)));
  for (auto& run : runs)
    for (const auto& m : marks) {
      auto a = m.topic_applied.find(run.topic);
      auto d = m.adopted.find(run.topic);
      auto l = m.last_opened.find(run.topic);
      run.opened_ms.push_back(l == m.last_opened.end() ? std::nan("") : ms_between(run.answered_sys, l->second));
      run.applied_ms.push_back(a == m.topic_applied.end() ? std::nan("") : ms_between(run.answered_sys, a->second));
      run.adopted_ms.push_back(d == m.adopted.end() ? std::nan("") : ms_between(run.answered_sys, d->second));
    }
}

void print_topic_run(const raft_cluster& c, const topic_run& run) {
  std::printf("  %s created at %s (%s): answered %d in %.1f ms\n", run.topic.c_str(), c.ids[run.creator].c_str(),
              run.creator_leads ? "leader" : "follower", run.create_status, run.create_ms);
  for (size_t b = 0; b < c.ids.size(); ++b) {
    std::printf("    %s%s applied %+7.1f adopted %+7.1f last opened %+7.1f | usable p0/mid/last", c.ids[b].c_str(),
                b == run.creator ? "*" : " ", run.applied_ms[b], run.adopted_ms[b], run.opened_ms[b]);
    int tries = 0;
    std::map<std::string, int> refused;
    for (const auto& p : run.probes)
      if (p.broker == b) {
        if (p.partition >= 0)
          std::printf(" %7.1f", p.ok_ms);
        else
          std::printf(" | sweep %7.1f", p.ok_ms);
        tries += p.attempts;
        for (const auto& [k, v] : p.refusals)
          refused[k] += v;
      }
    std::printf(" ms | ready: produce %.1f sweep %.1f ms | %d tries", run.ready_produce_ms[b], run.ready_sweep_ms[b],
                tries);
    for (const auto& [k, v] : refused)
      std::printf(", %d x %s", v, k.c_str());
    std::printf("\n");
  }
}

void print_topic_summary(const raft_cluster& c, const std::vector<topic_run>& runs, const options& o) {
  std::vector<double> create, probes, sweep, ready_sweep, follower_applied, follower_adopted, follower_probe,
    creator_probe, adopt_to_usable, ready_produce, creator_applied, creator_adopted, creator_opened, follower_opened;
  for (const auto& run : runs) {
    create.push_back(run.create_ms);
    double worst_probe = 0, worst_sweep = 0;
    for (size_t b = 0; b < c.ids.size(); ++b) {
      worst_probe = std::max(worst_probe, run.usable_ms(b, false));
      worst_sweep = std::max(worst_sweep, run.usable_ms(b, true));
      ready_sweep.push_back(run.ready_sweep_ms[b]);
      ready_produce.push_back(run.ready_produce_ms[b]);
      if (b == run.creator) {
        creator_probe.push_back(run.usable_ms(b, false));
        creator_applied.push_back(run.applied_ms[b]);
        creator_adopted.push_back(run.adopted_ms[b]);
        creator_opened.push_back(run.opened_ms[b]);
        continue;
      }
      follower_opened.push_back(run.opened_ms[b]);
      follower_applied.push_back(run.applied_ms[b]);
      follower_adopted.push_back(run.adopted_ms[b]);
      follower_probe.push_back(run.usable_ms(b, false));
      adopt_to_usable.push_back(run.usable_ms(b, false) - run.adopted_ms[b]);
    }
    probes.push_back(worst_probe);
    sweep.push_back(worst_sweep);
  }
  auto timeouts = std::count_if(runs.begin(), runs.end(), [](const topic_run& r) { return r.create_status == 504; });
  std::printf("\n2. a %d-partition topic usable through every broker, after POST /v1/topics answered (%zu topics, "
              "%zu answered 504 and are counted from that answer)\n",
              o.partitions, runs.size(), static_cast<size_t>(timeouts));
  print_against("partitions 0, mid, last through all 3", probes, usable_aim_ms);
  print_against("sweep of all partitions through all 3", sweep, usable_aim_ms);
  print_plain("POST /v1/topics answered (from sent)", create);
  std::printf("  where the time goes (ms after the create answered; log stamps read up to 1 ms low):\n");
  print_plain("  creator: entry applied (raft.applied)", creator_applied);
  print_plain("  creator: local copy made (topic.adopted)", creator_adopted);
  print_plain("  creator: last partition log opened", creator_opened);
  print_plain("  other brokers: entry applied (raft.applied)", follower_applied);
  print_plain("  other brokers: local copy made (topic.adopted)", follower_adopted);
  print_plain("  other brokers: last partition log opened", follower_opened);
  print_plain("  other brokers: usable (p0/mid/last)", follower_probe);
  print_plain("  other brokers: usable minus adopted", adopt_to_usable);
  print_plain("  creator: usable (p0/mid/last)", creator_probe);
  print_plain("  ready topic: one produce, any broker", ready_produce);
  print_plain("  ready topic: the sweep, any broker", ready_sweep);
}

/// Waits until every broker has opened every partition log of `topic`
/// (its partition.opened lines; at most 60 s, and only with debug lines),
/// then 1 s more for the disk, so that one run's file creation does not
/// overlap the next.
void settle(const raft_cluster& c, const std::string& topic, const options& o) {
  auto deadline = clock_type::now() + 60s;
  while (o.log_level == "debug" && clock_type::now() < deadline) {
    bool done = true;
    for (size_t i = 0; i < c.ids.size() && done; ++i)
      done = read_marks(c.log_path(i)).opened[topic] >= o.partitions;
    if (done)
      break;
    std::this_thread::sleep_for(100ms);
  }
  std::this_thread::sleep_for(1s);
}

/// Starts a cluster under `dir` and waits for its controller: the leader's index.
size_t start_cluster(raft_cluster& c, const options& o) {
  auto t0 = clock_type::now();
  c.start_all();
  auto leader = c.agreed(0, std::chrono::milliseconds(20 * o.election_ms));
  if (!leader)
    throw std::runtime_error("no controller elected");
  std::printf("cluster up: controller %s at term %lld, %.0f ms after the first start\n", c.ids[leader->first].c_str(),
              static_cast<long long>(leader->second), moonmq::bench::ms_since(t0));
  std::this_thread::sleep_for(2s);  // the previous cluster's shutdown writes settle
  std::fflush(stdout);
  return leader->first;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (int rc = moonmq::bench::parse_node_options(argc, argv, usage, o,
                                                 {{"--proposals", &o.proposals},
                                                  {"--topics", &o.topics},
                                                  {"--topics-per-cluster", &o.topics_per_cluster},
                                                  {"--partitions", &o.partitions},
                                                  {"--poll-us", &o.poll_us},
                                                  {"--retry-us", &o.retry_us},
                                                  {"--election-ms", &o.election_ms},
                                                  {"--heartbeat-ms", &o.heartbeat_ms},
                                                  {"--log-level", &o.log_level},
                                                  {"--keep", &o.keep}}))
    return rc;
  if (o.proposals < 1 || o.topics < 0 || o.topics_per_cluster < 1 || o.partitions < 2 || o.poll_us < 0
      || o.retry_us < 0) {
    std::fprintf(stderr, "counts must be positive (--partitions at least 2)\n");
    return 2;
  }
  auto work = o.dir + "/metadata-propagation-bench-" + std::to_string(::getpid());
  std::vector<std::string> common{"Cluster.Raft.ElectionTimeoutMs=" + std::to_string(o.election_ms),
                                  "Cluster.Raft.HeartbeatMs=" + std::to_string(o.heartbeat_ms),
                                  "LogLevel=" + o.log_level};
  std::printf("metadata_propagation_bench: 3 brokers, ElectionTimeoutMs=%d HeartbeatMs=%d, %d proposals, %d topics "
              "of %d partitions (%d per cluster), data under %s\n",
              o.election_ms, o.heartbeat_ms, o.proposals, o.topics, o.partitions, o.topics_per_cluster, work.c_str());
  try {
    int clusters = std::max(1, (o.topics + o.topics_per_cluster - 1) / o.topics_per_cluster);
    std::vector<topic_run> all;
    for (int k = 0; k < clusters; ++k) {
      raft_cluster c{o.node, work + "/cluster-" + std::to_string(k + 1), common};
      auto leader = start_cluster(c, o);
      std::vector<std::string> paths;
      for (size_t i = 0; i < c.ids.size(); ++i)
        paths.push_back(raft_actor_path(c, i));
      if (k == 0)
        run_apply_series(c, paths, leader, o, "image without topics", 0);
      std::vector<topic_run> runs;
      for (int t = k * o.topics_per_cluster; t < std::min(o.topics, (k + 1) * o.topics_per_cluster); ++t) {
        auto creator = static_cast<size_t>(t) % c.ids.size();
        runs.push_back(run_topic(c, creator, leader, "meta-bench-" + std::to_string(t), o));
        settle(c, runs.back().topic, o);
        // The controller may have moved meanwhile (it never should on a healthy cluster).
        leader = current_leader(c, paths, leader);
      }
      if (k == clusters - 1 && !runs.empty()) {
        auto label = std::to_string(runs.size() * static_cast<size_t>(o.partitions)) + " partitions in the image";
        run_apply_series(c, paths, leader, o, label.c_str(), 1000);
      }
      std::this_thread::sleep_for(200ms);
      add_log_stamps(c, runs);
      if (!runs.empty())
        std::printf("\n2. topics on cluster %d (* = creator; stamps and times in ms after the create answered)\n",
                    k + 1);
      for (const auto& run : runs)
        print_topic_run(c, run);
      all.insert(all.end(), runs.begin(), runs.end());
      if (k == clusters - 1 && !all.empty())
        print_topic_summary(c, all, o);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metadata_propagation_bench: %s (data kept in %s)\n", e.what(), work.c_str());
    return 1;
  }
  if (!o.keep)
    fs::remove_all(work);
  return 0;
}
