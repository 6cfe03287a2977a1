// moonmq-demo: drives a running cluster and shows it balance itself.
//
//   moonmq-demo --brokers b1=127.0.0.1:8080/127.0.0.1:9644,b2=...,b3=... [options]
//
// Creates topics whose partitions all start on the first broker, produces
// skewed traffic (acks=leader, every acknowledged offset kept), consumes it
// with a consumer group (following 421 not_owner across moves), prints a live
// summary (per-broker partitions and produce load, moves with progress bars,
// the balancer's last pass) until the cluster is balanced, then stops the
// producers, drains the consumers and verifies every acknowledged record.
// Exit: 0 verification passed, 1 it failed (or the cluster was unusable),
// 2 bad usage. SIGINT/SIGTERM: stop, drain, verify, print; a second one
// skips the rest of the drain. With --kill-broker-at (shared storage) it
// kills -9 one broker partway and shows its partitions failing over; the
// run then passes only if every one of them took writes again.

#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>

#include "cluster/reassignment_planner.hpp"
#include "tools/moonmq-demo/demo.hpp"
#include "tools/moonmq-demo/failover.hpp"
#include "tools/moonmq-demo/monitor.hpp"
#include "tools/moonmq-demo/verify.hpp"
#include "util/clock.hpp"

namespace moonmq::demo {
namespace {

using namespace std::chrono_literals;

void on_signal(int) {
  interrupted.fetch_add(1);
}

/// Prints the live summary: redrawn in place on a terminal, appended otherwise.
/// Events go above it and scroll.
class live_printer {
public:
  explicit live_printer(bool redraw) : redraw_(redraw && ::isatty(1)) {}
  void event(const std::string& line) { pending_.push_back(line); }
  void block(const std::vector<std::string>& lines) {
    std::string out;
    if (redraw_ && shown_ > 0)
      out += "\033[" + std::to_string(shown_) + "F\033[J";  // up to the block's first line, clear below
    for (const auto& e : pending_)
      out += e + "\n";
    pending_.clear();
    // Rows on screen: a line wider than the terminal wraps (all text is ASCII).
    size_t width = 0;
    winsize ws{};
    if (redraw_ && ::ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
      width = ws.ws_col;
    shown_ = 0;
    for (const auto& l : lines) {
      out += l + "\n";
      shown_ += width > 0 && l.size() > width ? (l.size() + width - 1) / width : 1;
    }
    if (!redraw_) {
      out += "\n";
      shown_ = 0;
    }
    std::cout << out << std::flush;
  }
  void flush_events() {
    for (const auto& e : pending_)
      std::cout << e << "\n";
    pending_.clear();
    shown_ = 0;
    std::cout << std::flush;
  }

private:
  bool redraw_;
  size_t shown_ = 0;
  std::vector<std::string> pending_;
};

/// Decides "balanced" from what the monitor sees.
class balance_tracker {
public:
  explicit balance_tracker(const options& o) : opt_(o) {}

  /// One observation; returns a one-word state for the summary header.
  std::string observe(const moves_view& moves, const balancer_view& bal, int manual_accepted, bool manual_submitted) {
    if (opt_.balance == "none") {
      balanced_ = moves.ok && moves.unfinished == 0;
      return balanced_ ? "no balancing (--balance none)" : "moves running";
    }
    if (opt_.balance == "manual") {
      balanced_ = manual_submitted && moves.ok && moves.unfinished == 0 &&
                  moves.done + moves.failed + moves.cancelled >= manual_accepted;
      if (!manual_submitted)
        return "traffic on the first broker; the demo submits a plan at " +
               std::to_string(opt_.manual_after_seconds) + " s";
      return balanced_ ? "balanced (the demo's plan is done)" : "moving";
    }
    // auto: the balance loop's word.
    if (bal.status != 200)
      return "waiting for GET /admin/balancer (no balance loop answers)";
    if (!bal.enabled || bal.dry_run || bal.superseded)
      return bal.superseded ? "the balance loop was superseded: it moves nothing"
             : bal.dry_run  ? "the balance loop runs DryRun: it moves nothing"
                            : "the balance loop is disabled";
    if (!moves.ok || moves.unfinished > 0) {
      quiet_passes_ = 0;
      balanced_ = false;
      last_pass_ = bal.pass_id;
      return "moving";
    }
    if (!bal.pass_id.empty() && bal.pass_id != last_pass_) {
      last_pass_ = bal.pass_id;
      if (bal.planned && *bal.planned > 0) {
        quiet_passes_ = 0;
        balanced_ = false;
      } else if (bal.planned && bal.conclusive) {
        // Planned nothing with every broker counted: balanced when every goal
        // is inside its band; when some goal is outside but has no acceptable
        // move (or its partitions cool down after a move), after a few such
        // passes in a row.
        ++quiet_passes_;
        balanced_ = bal.violated.empty() || quiet_passes_ >= settle_passes;
      }
    }
    if (balanced_)
      return bal.violated.empty() ? "balanced (the balancer's last pass planned nothing)"
                                  : "balanced as far as the goals can go (several passes planned nothing)";
    return bal.pass_id.empty() ? "waiting for the balancer's first pass" : "waiting for the balancer's next pass";
  }
  bool balanced() const { return balanced_; }
  /// Forgets what the passes so far concluded (the cluster changed under them).
  void restart() {
    quiet_passes_ = 0;
    balanced_ = false;
  }

private:
  /// Passes in a row that planned nothing while some goal was still outside
  /// its band, after which the demo calls it balanced anyway (the loop keeps
  /// partitions still for 3 passes after their move).
  static constexpr int settle_passes = 4;
  const options& opt_;
  bool balanced_ = false;
  int quiet_passes_ = 0;
  std::string last_pass_;
};

bool wait_healthy(const options& o) {
  for (const auto& b : o.brokers) {
    auto deadline = steady::now() + 30s;
    transport::http_result res;
    for (;;) {
      res = admin_call(o, b, "GET", "/health", {}, 2s);
      if (res.status == 200 || steady::now() > deadline)
        break;
      std::this_thread::sleep_for(200ms);
    }
    if (res.status != 200) {
      std::cerr << "moonmq-demo: broker " << b.id << " (admin " << b.admin_host << ":" << b.admin_port
                << ") is not healthy: " << describe_failure(res) << "\n";
      return false;
    }
    auto j = json::parse(res.body, nullptr, false);
    auto id = j.is_object() ? j.value("broker_id", std::string{}) : std::string{};
    if (id != b.id) {
      std::cerr << "moonmq-demo: the admin API given for " << b.id << " belongs to broker '" << id << "'\n";
      return false;
    }
  }
  return true;
}

/// Submits a plan spreading the demo's topics over every live broker.
std::string submit_manual_plan(const run& r, const cluster_snapshot& snap, int& accepted_moves) {
  std::vector<cluster::partition_owner> current;
  for (const auto& [tp, v] : snap.parts)
    current.push_back({{tp.topic, tp.partition}, cluster::broker_id{v.owner}});
  std::vector<cluster::broker_id> targets;
  for (const auto& [id, alive] : snap.brokers)
    if (alive)
      targets.emplace_back(id);
  auto plan = cluster::generate_plan(current, targets);
  if (!plan)
    return "event: no plan: " + plan.err().message;
  auto res = admin_call(r.opt, r.opt.brokers.front(), "POST", "/admin/reassignments",
                        cluster::plan_to_json(*plan).dump(), 10s);
  auto j = json::parse(res.body, nullptr, false);
  if (res.status != 202 || !j.is_object())
    return "event: POST /admin/reassignments failed: " + describe_failure(res);
  accepted_moves = 0;
  for (const auto& a : j.value("accepted", json::array()))
    if (a.value("state", "") != "done")
      ++accepted_moves;
  return "event: submitted a plan spreading the topics over " + std::to_string(targets.size()) + " brokers: " +
         std::to_string(accepted_moves) + " moves accepted, " + std::to_string(j.value("rejected", json::array()).size()) +
         " rejected";
}

/// Parses `b1=123,b2=456` into `out`; false with `why` set when malformed.
bool parse_pids(const std::string& text, std::map<std::string, int>& out, std::string& why) {
  size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find(',', pos);
    auto item = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    if (item.empty())
      continue;
    auto eq = item.find('=');
    int pid = 0;
    bool digits = eq != std::string::npos && eq > 0 && eq + 1 < item.size() && item.size() - eq <= 10;
    for (size_t i = eq + 1; digits && i < item.size(); ++i) {
      digits = item[i] >= '0' && item[i] <= '9';
      pid = pid * 10 + (item[i] - '0');
    }
    if (!digits || pid <= 1) {
      why = "'" + item + "' is not id=pid";
      return false;
    }
    out[item.substr(0, eq)] = pid;
  }
  return true;
}

int run_demo(options o, bool require_balanced) {
  run r;
  r.opt = std::move(o);
  const auto& opt = r.opt;
  // The run id tells this run's records from any earlier run's on the same topics.
  std::random_device rd;
  char idbuf[16];
  std::snprintf(idbuf, sizeof idbuf, "%06x", rd() & 0xffffffu);
  r.id = idbuf;

  if (!wait_healthy(opt))
    return 1;
  const auto& first = opt.brokers.front();
  for (int t = 0; t < opt.topics; ++t) {
    std::string topic = opt.topic_prefix + "-" + std::to_string(t);
    auto res = transport::http_call(first.client_host, first.client_port, "POST", "/v1/topics",
                                    json{{"name", topic}, {"partitions", opt.partitions}}.dump());
    if (res.status != 201 && res.status != 200) {
      std::cerr << "moonmq-demo: creating topic " << topic << " on " << first.id << " failed: " << describe_failure(res)
                << " " << res.body << "\n";
      return 1;
    }
    if (res.status == 200)
      std::cout << "moonmq-demo: topic " << topic << " already exists; its partitions may not all start on "
                << first.id << "\n";
    for (int p = 0; p < opt.partitions; ++p) {
      tp_key tp{topic, p};
      r.partitions.push_back(tp);
      r.ledgers[tp] = std::make_unique<partition_ledger>();
      r.consumed[tp] = std::make_unique<partition_consumption>();
    }
  }
  for (int k = 0; k < opt.hot_partitions; ++k)
    r.hot.push_back({opt.topic_prefix + "-" + std::to_string(k % opt.topics), (k / opt.topics) % opt.partitions});
  std::string hot_names;
  for (const auto& h : r.hot)
    hot_names += (hot_names.empty() ? "" : ", ") + h.str();
  std::cout << "moonmq-demo: run " << r.id << ": " << opt.topics << " topics x " << opt.partitions
            << " partitions created on " << first.id << "; " << opt.producers << " producers at "
            << (opt.rate > 0 ? std::to_string(static_cast<int64_t>(opt.rate)) + " records/s" : "full speed") << " ("
            << opt.value_bytes << "-byte values, " << static_cast<int>(opt.hot_share * 100) << "% to " << hot_names
            << "); group " << opt.group << "; balance " << opt.balance << "\n";

  const int64_t start_wall = util::wall_ms();
  const auto start = steady::now();
  std::vector<std::thread> consumers, producers;
  std::vector<std::unique_ptr<std::atomic<bool>>> drained;
  for (int t = 0; t < opt.topics; ++t) {
    drained.push_back(std::make_unique<std::atomic<bool>>(false));
    consumers.emplace_back(run_consumer, std::ref(r), opt.topic_prefix + "-" + std::to_string(t),
                           std::ref(*drained.back()));
  }
  for (int i = 0; i < opt.producers; ++i)
    producers.emplace_back(run_producer, std::ref(r), i);

  live_printer printer{opt.redraw};
  balance_tracker tracker{opt};
  failover_watch failover{r};
  cluster_snapshot prev = take_snapshot(r), snap;
  std::map<std::string, broker_load> before, last_live;
  bool have_before = false, manual_submitted = false;
  int manual_accepted = 0;
  double balanced_at = -1;
  moves_view moves;
  for (;;) {
    auto tick_end = steady::now() + std::chrono::milliseconds(opt.summary_ms);
    while (steady::now() < tick_end && interrupted == 0)
      std::this_thread::sleep_for(50ms);
    double elapsed = std::chrono::duration<double>(steady::now() - start).count();
    snap = take_snapshot(r);
    auto loads = broker_loads(r, snap, prev.ok ? &prev : nullptr);
    if (snap.ok && prev.ok) {
      last_live = loads;
      if (!have_before) {
        before = loads;
        have_before = true;
      }
    }
    if (snap.ok)
      prev = snap;
    if (opt.balance == "manual" && !manual_submitted && elapsed >= opt.manual_after_seconds && snap.ok) {
      printer.event(submit_manual_plan(r, snap, manual_accepted));
      manual_submitted = true;
    }
    moves = take_moves(r, start_wall - 1000);
    auto bal = opt.balance == "auto" || failover.wanted() ? take_balancer(r, failover.victim()) : balancer_view{};
    for (const auto& e : failover.tick(elapsed, snap, bal))
      printer.event(e);
    std::string state;
    if (!failover.victim().empty() && !failover.done()) {
      // The balance question starts again once the failover is over.
      tracker.restart();
      state = "failing over " + failover.victim() + "'s partitions";
    } else {
      state = tracker.observe(moves, bal, manual_accepted, manual_submitted);
    }
    if (tracker.balanced() && balanced_at < 0)
      balanced_at = elapsed;
    if (!tracker.balanced())
      balanced_at = -1;
    auto lines = summary_lines(r, elapsed, snap, loads, moves, bal, state);
    for (auto& l : failover.summary_lines())
      lines.push_back(std::move(l));
    printer.block(lines);
    if (interrupted > 0) {
      printer.event("moonmq-demo: interrupted: stopping the producers, draining, verifying (Ctrl-C again skips the drain)");
      break;
    }
    if (tracker.balanced() && elapsed >= opt.duration_seconds && failover.done())
      break;
    if (elapsed >= opt.until_balanced_seconds) {
      printer.event("moonmq-demo: --until-balanced-seconds " + std::to_string(opt.until_balanced_seconds) +
                    " reached; stopping");
      break;
    }
  }
  printer.flush_events();
  const double live_seconds = std::chrono::duration<double>(steady::now() - start).count();

  r.stop_producers = true;
  for (auto& t : producers)
    t.join();
  r.producers_stopped = true;
  std::cout << "moonmq-demo: producers stopped (" << r.acked_records << " records acknowledged); draining consumers\n";
  auto drain_deadline = steady::now() + std::chrono::seconds(opt.drain_seconds);
  auto all_drained = [&] {
    for (const auto& d : drained)
      if (!*d)
        return false;
    return true;
  };
  auto last_note = steady::now();
  while (!all_drained()) {
    if (interrupted >= 2 || steady::now() > drain_deadline) {
      std::cout << "moonmq-demo: "
                << (interrupted >= 2 ? "interrupted again" : "drain limit of " + std::to_string(opt.drain_seconds) + " s")
                << ": consumers stop before the log end\n";
      break;
    }
    if (steady::now() - last_note > 2s) {
      last_note = steady::now();
      int64_t lag = 0;
      for (const auto& [tp, c] : r.consumed)
        lag += std::max<int64_t>(0, c->log_end - c->position);
      std::cout << "moonmq-demo: draining, lag " << lag << "\n" << std::flush;
    }
    std::this_thread::sleep_for(50ms);
  }
  r.stop_consumers = true;
  for (auto& t : consumers)
    t.join();

  auto result = verify(r);
  for (const auto& l : result.lines)
    std::cout << l << "\n";
  auto final_snap = take_snapshot(r);
  auto after = broker_loads(r, final_snap, nullptr);
  for (auto& [id, l] : after)
    l.bytes_per_s = last_live.count(id) ? last_live[id].bytes_per_s : 0;
  for (const auto& l : before_after_lines(r, before, after))
    std::cout << l << "\n";
  for (const auto& l : failover.report_lines())
    std::cout << l << "\n";
  auto final_moves = take_moves(r, start_wall - 1000);
  char buf[256];
  if (balanced_at >= 0)
    std::snprintf(buf, sizeof buf, "balanced: yes, at %.1f s (%d moves done, %d failed, %d cancelled)", balanced_at,
                  final_moves.done, final_moves.failed, final_moves.cancelled);
  else
    std::snprintf(buf, sizeof buf, "balanced: no, not within %.1f s (%d moves done, %d failed, %d still running)",
                  live_seconds, final_moves.done, final_moves.failed, final_moves.unfinished);
  std::cout << buf << "\n";
  // An interrupted run may end before the kill or the failover: then only the records count.
  bool ok = result.passed && (!require_balanced || balanced_at >= 0) && (failover.done() || interrupted > 0);
  std::cout << "moonmq-demo: " << (ok ? "OK" : "FAILED") << (interrupted ? " (interrupted)" : "") << "\n";
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace moonmq::demo

int main(int argc, char** argv) {
  using namespace moonmq::demo;
  CLI::App app{"moonmq-demo: skewed traffic and a consumer group on a running cluster while it balances, then a "
               "verification of every acknowledged record"};
  // A later occurrence wins, so scripts/demo.sh's defaults can be overridden.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  options o;
  std::string brokers;
  bool require_balanced = false, no_redraw = false;
  app.add_option("--brokers", brokers, "id=client_host:port/admin_host:port, comma separated; topics start on the first")
    ->required();
  app.add_option("--token", o.admin_token, "admin API bearer token (Server.Admin.Token)");
  app.add_option("--duration-seconds", o.duration_seconds, "traffic runs at least this long")
    ->capture_default_str()->check(CLI::Range(1, 86400));
  app.add_option("--until-balanced-seconds", o.until_balanced_seconds,
                 "stop waiting for the cluster to balance after this long (whole live phase)")
    ->capture_default_str()->check(CLI::Range(1, 86400));
  app.add_option("--topics", o.topics, "topics to create")->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--partitions", o.partitions, "partitions per topic")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--topic-prefix", o.topic_prefix, "topics are <prefix>-0, <prefix>-1, ...")->capture_default_str();
  app.add_option("--rate", o.rate, "records/s over all producers (0 = as fast as acknowledgements come)")
    ->capture_default_str()->check(CLI::Range(0.0, 1e7));
  app.add_option("--producers", o.producers, "producer threads")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--batch", o.batch, "records per produce request")->capture_default_str()->check(CLI::Range(1, 10000));
  app.add_option("--value-bytes", o.value_bytes, "bytes per record value")->capture_default_str()->check(CLI::Range(64, 1 << 20));
  app.add_option("--hot-partitions", o.hot_partitions, "partitions that get --hot-share of the records")
    ->capture_default_str()->check(CLI::Range(0, 100000));
  app.add_option("--hot-share", o.hot_share, "share of the records that go to the hot partitions")
    ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--group", o.group, "consumer group")->capture_default_str();
  app.add_option("--balance", o.balance,
                 "auto: wait for the balance loop; manual: the demo submits a plan spreading the topics; none")
    ->capture_default_str()->check(CLI::IsMember({"auto", "manual", "none"}));
  app.add_option("--manual-after-seconds", o.manual_after_seconds, "--balance manual: when the plan is submitted")
    ->capture_default_str()->check(CLI::Range(0, 86400));
  app.add_option("--summary-ms", o.summary_ms, "live summary period")->capture_default_str()->check(CLI::Range(200, 60000));
  app.add_option("--drain-seconds", o.drain_seconds, "consumers' time to reach the log end after the producers stop")
    ->capture_default_str()->check(CLI::Range(1, 3600));
  std::string pids;
  app.add_option("--kill-broker-at", o.kill_broker_at,
                 "kill -9 one broker after this fraction of --duration-seconds: the one owning most partitions "
                 "that is not the Raft leader (shared storage: its partitions fail over); 0 = none")
    ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--broker-pids", pids, "id=pid, comma separated: the brokers' processes, for --kill-broker-at");
  app.add_flag("--no-redraw", no_redraw, "append each summary instead of redrawing it in place on a terminal");
  app.add_flag("--require-balanced", require_balanced, "exit 1 also when the cluster did not balance in time");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  std::string why;
  auto parsed = parse_brokers(brokers, why);
  if (!parsed) {
    std::cerr << "moonmq-demo: --brokers: " << why << "\n";
    return 2;
  }
  o.brokers = std::move(*parsed);
  if (!parse_pids(pids, o.broker_pids, why)) {
    std::cerr << "moonmq-demo: --broker-pids: " << why << "\n";
    return 2;
  }
  if (o.kill_broker_at > 0 && o.broker_pids.empty()) {
    std::cerr << "moonmq-demo: --kill-broker-at needs --broker-pids\n";
    return 2;
  }
  o.redraw = !no_redraw;
  if (o.hot_partitions > o.topics * o.partitions) {
    std::cerr << "moonmq-demo: --hot-partitions " << o.hot_partitions << " is more than the " << o.topics * o.partitions
              << " partitions\n";
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  return run_demo(std::move(o), require_balanced);
}
