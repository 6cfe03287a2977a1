// The zombie acceptance test of shared storage (docs/shared-storage.md "Why
// no acknowledged record is lost and no two writers interleave"), on three
// real moonmq-node processes sharing one directory. Each trial freezes an
// owner (SIGSTOP) at a random moment of a continuous produce stream (mid-
// append, mid-fsync) or of a move of one of its partitions (mid-move), for
// longer than LeaseMs + LeaseMarginMs, lets the controller fail its
// partitions over, keeps producing through the new owners, then thaws it
// (SIGCONT). The frozen owner must acknowledge nothing more for those
// partitions, every acknowledged record must read back at its offset, the
// logs must have no hole and no record twice, and the thawed broker must
// own none of its old partitions' epochs. Some trials freeze the Raft
// leader itself. At the end every partition of every trial is read again
// from its owner then (often another one, after later trials' failovers)
// and must read exactly as it did at its trial's end.
//
// "Nothing more" is checked on requests sent straight to the frozen
// broker's cluster port (it appends or refuses, never forwards): a success
// it gives after the thaw fails the test, except for a request already in
// flight at the stop whose offsets all lie below the successor epoch's
// start. That one may have been decided (synced, lease valid) just before
// the stop with its answer still inside the process when it froze; its
// records must then read back at their offsets, like every other
// acknowledged record.
//
// MOONMQ_ZOMBIE_SEED fixes the seed (printed at the start and with every
// failure); MOONMQ_ZOMBIE_TRIALS sets the number of trials (20 by default).

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

#include "storage/record_batch.hpp"
#include "tests/node/shared_cluster.hpp"
#include "net/blocking_client.hpp"
#include "util/clock.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace moonmq::test::shared_storage;
using namespace std::chrono_literals;

namespace {

/// One produce request as its producer saw it: when it was sent and
/// answered (the test's steady clock), the answer, and the offsets given.
struct attempt {
  clock_type::time_point sent;
  clock_type::time_point answered;
  int status = 0;
  std::string error;  ///< the body or transport error of a refusal (truncated)
  int64_t base = -1;  ///< the first record's offset when status is 200
  std::vector<sent_record> records;
};

/// How a tracked producer reaches the partition.
enum class produce_path {
  /// POST /cluster/partitions/{t}/{p}/records on one broker's cluster port,
  /// an encoded batch, as a forwarding broker sends it: that broker appends
  /// itself or refuses (421 to a non-owner), it never forwards. A 200 there
  /// is an acknowledgement by that broker, so the zombie's answers can be
  /// attributed exactly.
  owner_direct,
  /// POST /v1/topics/{t}/records on a client port: routed to the owner
  /// (forwarded, re-routed after a refusal that proves nothing was
  /// appended), as an HTTP client writes.
  via_broker,
};

/// A producer thread that writes one partition continuously, one request
/// at a time on a fresh connection (no hidden resend of a request whose
/// answer was lost), and keeps every attempt.
class tracked_producer {
public:
  tracked_producer(produce_path path, uint16_t port, std::string topic, int partition, int per_request,
                   size_t value_bytes, std::string acks, std::string prefix)
      : path_(path), port_(port), topic_(std::move(topic)), partition_(partition), per_request_(per_request),
        value_bytes_(value_bytes), acks_(std::move(acks)), prefix_(std::move(prefix)) {
    thread_ = std::thread([this] { run(); });
  }
  ~tracked_producer() { stop(); }
  tracked_producer(const tracked_producer&) = delete;
  tracked_producer& operator=(const tracked_producer&) = delete;

  void stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }
  std::vector<attempt> attempts() const {
    std::lock_guard lock{mu_};
    return attempts_;
  }
  /// Acknowledged requests answered after `t`.
  int ok_after(clock_type::time_point t) const {
    std::lock_guard lock{mu_};
    int n = 0;
    for (const auto& a : attempts_)
      n += a.status == 200 && a.answered > t ? 1 : 0;
    return n;
  }
  produce_path path() const { return path_; }
  const std::string& prefix() const { return prefix_; }
  int partition() const { return partition_; }

private:
  void run() {
    int n = 0;
    while (!stop_) {
      attempt a;
      for (int k = 0; k < per_request_; ++k, ++n) {
        sent_record r{prefix_ + "-" + std::to_string(n), prefix_ + "-" + std::to_string(n) + "-"};
        // Values differ record by record, so a shifted offset cannot match.
        while (r.value.size() < value_bytes_)
          r.value += static_cast<char>('a' + (r.value.size() * 7 + static_cast<size_t>(n)) % 26);
        a.records.push_back(std::move(r));
      }
      moonmq::transport::http_result res;
      a.sent = clock_type::now();
      if (path_ == produce_path::owner_direct) {
        std::vector<moonmq::storage::record> recs;
        for (const auto& r : a.records)
          recs.push_back(moonmq::storage::record{r.key, r.value, {}, moonmq::util::wall_ms()});
        res = moonmq::transport::http_call(port_, "POST",
                                   "/cluster/partitions/" + topic_ + "/" + std::to_string(partition_)
                                     + "/records?acks=" + acks_,
                                   moonmq::storage::encode_batch(recs).value(),
                                   {{"X-Cluster-Token", cluster_token}, {"Content-Type", "application/octet-stream"}},
                                   30s);
      } else {
        json records = json::array();
        for (const auto& r : a.records)
          records.push_back({{"key", r.key}, {"value", r.value}, {"partition", partition_}});
        res = moonmq::transport::http_call(port_, "POST", "/v1/topics/" + topic_ + "/records?acks=" + acks_,
                                   json{{"records", records}}.dump(), {}, 30s);
      }
      a.answered = clock_type::now();
      a.status = res.status;
      if (res.status == 200) {
        auto body = json::parse(res.body, nullptr, false);
        if (path_ == produce_path::owner_direct && body.is_object() && body["base_offset"].is_number_integer()) {
          a.base = body["base_offset"].get<int64_t>();
        } else if (path_ == produce_path::via_broker && body.is_object() && body["offsets"].is_array()
                   && body["offsets"].size() == a.records.size()) {
          a.base = body["offsets"][0]["offset"].get<int64_t>();
          for (size_t k = 0; k < a.records.size(); ++k)
            if (body["offsets"][k]["offset"].get<int64_t>() != a.base + static_cast<int64_t>(k))
              a.base = -1;  // one request is one batch: its offsets are consecutive
        }
        if (a.base < 0) {
          a.status = -1;
          a.error = "malformed answer: " + res.body.substr(0, 300);
        }
      } else {
        a.error = (res.body + res.error).substr(0, 300);
      }
      const bool refused = a.status != 200;
      {
        std::lock_guard lock{mu_};
        attempts_.push_back(std::move(a));
      }
      if (refused)
        std::this_thread::sleep_for(20ms);
    }
  }

  produce_path path_;
  uint16_t port_;
  std::string topic_;
  int partition_;
  int per_request_;
  size_t value_bytes_;
  std::string acks_;
  std::string prefix_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<attempt> attempts_;
  std::thread thread_;
};

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

/// Partition -> owner of `topic` in broker `i`'s image (GET /cluster/owners).
std::map<int, std::string> owners_of(const move_cluster& c, size_t i, const std::string& topic) {
  std::map<int, std::string> out;
  auto a = cluster_call(c.cluster_port(i), "GET", "/cluster/owners");
  for (const auto& row : a.body.value("owners", json::array()))
    if (row.value("topic", "") == topic)
      out[row.value("partition", -1)] = row.value("owner", "");
  return out;
}

/// Broker `i`'s GET /admin/cluster (null when it does not answer 200).
json cluster_view(const move_cluster& c, size_t i) {
  auto a = call(c.admin(i), "GET", "/admin/cluster");
  return a.status == 200 && a.body.is_object() ? a.body : json{};
}

/// Partition -> owner epoch of `topic` in a GET /admin/cluster answer.
std::map<int, int64_t> epochs_in(const json& view, const std::string& topic) {
  std::map<int, int64_t> out;
  if (view.is_object())
    for (const auto& row : view.value("partitions", json::array()))
      if (row.value("topic", "") == topic)
        out[row.value("partition", -1)] = row.value("owner_epoch", int64_t{-1});
  return out;
}

/// Broker `i` has rejoined: its lease holds and its image fences nobody.
bool rejoined(const move_cluster& c, size_t i) {
  auto v = cluster_view(c, i);
  return v.is_object() && v["raft"].value("lease_valid", false) && v.value("fenced_brokers", json::array()).empty();
}

/// The start offset of takeover record `name` of partition `root`
/// ("moonmq-takeover v1 epoch=E start_offset=T crc32c=..."), or -1.
int64_t start_offset_of(const std::string& root, const std::string& name) {
  auto text = read_text(root + "/epochs/" + name);
  auto at = text.find("start_offset=");
  return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + 13);
}

/// What one trial does: which broker to freeze, when, and whether a move of
/// one of its partitions is under way at that moment.
struct trial_plan {
  bool freeze_leader = false;
  bool mid_move = false;
  int delay_ms = 0;  ///< after the producers are warm (or after the move's submission)
};

/// The records of one partition as read at the end of its trial.
struct snapshot {
  std::string topic;
  int partition = 0;
  std::map<int64_t, sent_record> records;
  int64_t log_end = -1;
};

}  // namespace

TEST_CASE("shared storage: a frozen owner thawed after its partitions failed over acknowledges nothing more for them, "
          "over 20 trials at random moments",
          "[node][shared][zombie][scenario]") {
  const auto seed = static_cast<uint32_t>(env_int("MOONMQ_ZOMBIE_SEED", static_cast<int>(std::random_device{}() >> 1)));
  const int trials = std::max(1, env_int("MOONMQ_ZOMBIE_TRIALS", 20));
  std::mt19937 rng{seed};
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>{lo, hi}(rng); };
  std::printf("zombie: seed %u (MOONMQ_ZOMBIE_SEED=%u repeats this run), %d trials\n", seed, seed, trials);
  INFO("seed " << seed << " (MOONMQ_ZOMBIE_SEED=" << seed << " repeats this run)");

  // Every third trial freezes a move's source mid-move, every fifth the Raft
  // leader; the order is shuffled.
  std::vector<trial_plan> plans;
  for (int t = 0; t < trials; ++t) {
    trial_plan p;
    p.mid_move = t % 3 == 1;
    p.freeze_leader = t % 5 == 3;
    plans.push_back(p);
  }
  std::shuffle(plans.begin(), plans.end(), rng);
  for (auto& p : plans)
    p.delay_ms = p.mid_move ? uniform(0, 250) : uniform(0, 600);

  temp_dir shared;
  move_cluster c{{"b1", "b2", "b3"}, shared_config(shared)};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  size_t leader = elected->first;
  // MOONMQ_ZOMBIE_LOG_DIR: every broker's whole log is written there at the
  // end, however the test ends, for a failure the tails do not explain.
  struct log_dump {
    const move_cluster& c;
    uint32_t seed;
    ~log_dump() {
      const char* dir = std::getenv("MOONMQ_ZOMBIE_LOG_DIR");
      if (!dir || !*dir)
        return;
      const auto path = std::string(dir) + "/zombie-seed-" + std::to_string(seed) + ".log";
      if (FILE* f = std::fopen(path.c_str(), "w")) {
        const auto all = c.all_logs();
        std::fwrite(all.data(), 1, all.size(), f);
        std::fclose(f);
        std::printf("zombie: broker logs in %s\n", path.c_str());
      }
    }
  } dump{c, seed};

  std::vector<snapshot> snapshots;
  int total_acked = 0, total_in_flight = 0, total_after_cont = 0, total_zombie_acks = 0, total_late = 0;
  const auto test_start = clock_type::now();

  for (int t = 0; t < trials; ++t) {
    const auto& plan = plans[static_cast<size_t>(t)];
    const std::string topic = "z" + std::to_string(t);
    std::ostringstream story;  // what happened, for a failure message
    story << "seed " << seed << ", trial " << t + 1 << "/" << trials << " (" << (plan.mid_move ? "mid-move" : "produce")
          << (plan.freeze_leader ? ", freeze the Raft leader" : "") << ", delay " << plan.delay_ms << " ms)\n";
    std::vector<std::string> problems;
    int trial_in_flight = 0, trial_after_cont = 0, trial_zombie_acks = 0, trial_late = 0;
    auto problem = [&](const std::string& what) { problems.push_back(what); };

    // The broker to freeze, and a topic of 4 partitions created through
    // it (a new topic's partitions are placed on the broker that creates it).
    std::vector<size_t> candidates;
    for (size_t i = 0; i < 3; ++i)
      if ((i == leader) == plan.freeze_leader)
        candidates.push_back(i);
    size_t zombie = candidates[static_cast<size_t>(uniform(0, static_cast<int>(candidates.size()) - 1))];
    create_topic(c.client(zombie), topic, 4);
    std::map<int, std::string> owners;
    REQUIRE(wait_until([&] { return (owners = owners_of(c, leader, topic)).size() == 4; }, 10s));
    bool owns = false;
    for (const auto& [p, o] : owners)
      owns = owns || o == c.id(zombie);
    if (!owns)  // placed elsewhere after all: freeze the owner of partition 0
      zombie = *index_of(c, owners[0]);
    const bool froze_leader = zombie == leader;
    std::vector<int> zparts;
    for (const auto& [p, o] : owners)
      if (o == c.id(zombie))
        zparts.push_back(p);
    std::vector<size_t> live;
    for (size_t i = 0; i < 3; ++i)
      if (i != zombie)
        live.push_back(i);
    const size_t via = live[static_cast<size_t>(uniform(0, 1))];
    const size_t observer = froze_leader ? via : leader;
    const auto epochs_before = epochs_in(cluster_view(c, leader), topic);
    story << "freeze " << c.id(zombie) << (froze_leader ? " (the Raft leader)" : "") << ", its partitions";
    for (int p : zparts)
      story << " " << p << "@epoch " << (epochs_before.count(p) ? epochs_before.at(p) : -1);
    story << "; clients through " << c.id(via) << "\n";

    // Producers on each of its partitions: two straight to it (one with
    // acks=all), one through a live broker; requests of a few KB to a few
    // tens of KB, so that appends and fsyncs take a while.
    std::vector<std::unique_ptr<tracked_producer>> producers;
    for (int p : zparts) {
      const std::string base = topic + "-p" + std::to_string(p);
      producers.push_back(std::make_unique<tracked_producer>(produce_path::owner_direct, c.cluster_port(zombie), topic, p,
                                                             uniform(4, 24), static_cast<size_t>(uniform(100, 1200)),
                                                             "leader", base + "-d0"));
      producers.push_back(std::make_unique<tracked_producer>(produce_path::owner_direct, c.cluster_port(zombie), topic, p,
                                                             uniform(4, 24), static_cast<size_t>(uniform(100, 1200)),
                                                             "all", base + "-d1"));
      producers.push_back(std::make_unique<tracked_producer>(produce_path::via_broker, c.client(via), topic, p,
                                                             uniform(4, 24), static_cast<size_t>(uniform(100, 1200)),
                                                             uniform(0, 1) ? "all" : "leader", base + "-v"));
    }
    const auto warm_from = clock_type::now();
    auto warm = [&] {
      for (auto& pr : producers)
        if (pr->ok_after(warm_from) < 3)
          return false;
      return true;
    };
    if (!wait_until(warm, 20s))
      FAIL(story.str() << "the producers did not get 3 acknowledgements each within 20 s\n" << log_tails(c));

    // The moment: a random delay into the stream, or into a move of one of
    // its partitions to a live broker (submitted on the frozen-to-be source).
    json move_row;
    int moved_partition = -1;
    if (plan.mid_move) {
      moved_partition = zparts[static_cast<size_t>(uniform(0, static_cast<int>(zparts.size()) - 1))];
      const size_t dest = live[static_cast<size_t>(uniform(0, 1))];
      auto sub = submit_move(c.admin(zombie), topic, moved_partition, c.id(dest));
      story << "move of partition " << moved_partition << " to " << c.id(dest) << " submitted: " << sub.dump() << "\n";
      if (sub["accepted"].size() != 1)
        moved_partition = -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(plan.delay_ms));
    // The stop's time is taken once every thread of the broker is stopped
    // (SIGSTOP takes effect on a thread when the kernel next schedules it:
    // on a loaded machine, milliseconds after kill() returned; a request
    // sent in between could be read and acknowledged before the stop).
    c.signal(zombie, SIGSTOP);
    REQUIRE(c.wait_stopped(zombie, 5s));
    const auto stop_at = clock_type::now();
    // Whatever fails below, the broker is thawed before the next trial.
    struct thaw_guard {
      move_cluster& c;
      size_t i;
      bool frozen = true;
      ~thaw_guard() {
        if (frozen)
          c.signal(i, SIGCONT);
      }
    } thaw{c, zombie};

    // The controller fences it after SessionTimeoutMs and hands its
    // partitions over once it has been silent for W.
    std::map<int, std::string> now_owners;
    auto handed_over = [&] {
      now_owners = owners_of(c, observer, topic);
      for (int p : zparts)
        if (!now_owners.count(p) || now_owners[p].empty() || now_owners[p] == c.id(zombie))
          return false;
      return true;
    };
    if (!wait_until(handed_over, froze_leader ? 40s : 30s))
      FAIL(story.str() << "the frozen broker's partitions were not handed over within 30 s\n" << log_tails(c));
    const auto over_at = clock_type::now();
    story << "handed over after " << std::chrono::duration<double>(over_at - stop_at).count() << " s:";
    for (int p : zparts)
      story << " " << p << "->" << now_owners[p];
    story << "\n";

    // The new owners take writes while the old one is still frozen: a
    // producer straight to each new owner (the ones through a live broker
    // may wait for a forward to the frozen broker to time out).
    for (int p : zparts) {
      // Once it serves the partition: a request that reaches a new owner
      // still applying the handover is forwarded to the frozen broker and
      // waits out the request timeout (10 s).
      if (!wait_until([&] { return who_serves(c.client(*index_of(c, now_owners[p])), topic, p).first == 200; }, 10s))
        problem("partition " + std::to_string(p) + ": its new owner " + now_owners[p] + " does not serve it");
      producers.push_back(std::make_unique<tracked_producer>(
        produce_path::via_broker, c.client(*index_of(c, now_owners[p])), topic, p, uniform(4, 24),
        static_cast<size_t>(uniform(100, 1200)), "leader", topic + "-p" + std::to_string(p) + "-n"));
    }
    double second_write_s = 0;
    for (auto& pr : producers)
      if (pr->path() == produce_path::via_broker && pr->prefix().back() == 'n') {
        if (!wait_until([&] { return pr->ok_after(over_at) >= 2; }, 15s))
          problem("partition " + std::to_string(pr->partition()) + " took no write on its new owner within 15 s of "
                  "its handover");
        second_write_s = std::max(second_write_s, seconds_since(over_at));
      }
    story << "every new owner took writes " << second_write_s << " s after the handover was seen\n";

    // Thaw it: whatever it had in flight, and whatever it is sent now, is refused.
    const auto cont_at = clock_type::now();
    c.signal(zombie, SIGCONT);
    thaw.frozen = false;
    story << "thawed after " << std::chrono::duration<double>(cont_at - stop_at).count() << " s frozen\n";
    std::this_thread::sleep_for(1s);
    if (!wait_until([&] { return rejoined(c, zombie); }, 20s)) {
      const auto v = cluster_view(c, zombie);
      problem("the thawed broker did not rejoin (lease valid, nobody fenced) within 20 s; its view: lease_valid="
              + (v.is_object() ? v["raft"].value("lease_valid", json(false)).dump() : std::string("?"))
              + " fenced_brokers=" + (v.is_object() ? v.value("fenced_brokers", json::array()).dump() : std::string("?"))
              + " raft=" + (v.is_object() ? v["raft"].dump().substr(0, 300) : std::string("no answer")));
    }
    if (moved_partition >= 0) {
      move_row = wait_move(c.admin(zombie), topic, moved_partition, c.id(zombie), {}, 30s);
      story << "move: " << move_row.dump() << "\n";
      if (move_row.is_null() || !is_terminal(move_row.value("state", "")))
        problem("the move did not end within 30 s of the thaw");
    }
    for (auto& pr : producers)
      pr->stop();
    auto again = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
    if (!again)
      FAIL(story.str() << "no leader agreed after the thaw\n" << log_tails(c));
    leader = again->first;

    // The checks, per partition of the frozen broker.
    const auto view_after = cluster_view(c, zombie);
    const auto epochs_after = epochs_in(view_after, topic);
    now_owners = owners_of(c, leader, topic);
    for (int p : zparts) {
      const std::string where = "partition " + std::to_string(p) + ": ";
      // It owns none of its old epochs: the image (its own included) names
      // another owner at a later epoch, and it serves nothing itself.
      const auto owner = index_of(c, now_owners[p]);
      if (!owner) {
        problem(where + "owned by '" + now_owners[p] + "' after the thaw");
        continue;
      }
      if (*owner == zombie)  // the checks below still run: was anything lost?
        problem(where + "owned by the thawed broker " + now_owners[p] + " again");
      if (!epochs_before.count(p) || !epochs_after.count(p) || epochs_after.at(p) <= epochs_before.at(p))
        problem(where + "the owner epoch did not move past the frozen broker's");
      if (*owner != zombie
          && !wait_until([&] { return who_serves(c.client(zombie), topic, p) == std::make_pair(421, now_owners[p]); }, 10s))
        problem(where + "the thawed broker does not name " + now_owners[p] + " owner (421)");
      auto root = partition_root(shared.path(), topic + "-" + std::to_string(p));
      auto records = epochs_of(root);
      if (records.empty() || !epochs_before.count(p) || std::stoll(records.back()) <= epochs_before.at(p))
        problem(where + "no takeover record above the frozen broker's epoch in " + root);
      // Where the frozen broker's writing ended: the start of the first
      // epoch above the one it held (its successor's takeover offset).
      int64_t end_of_zombie = -1;
      for (const auto& r : records)
        if (end_of_zombie < 0 && epochs_before.count(p) && std::stoll(r) > epochs_before.at(p))
          end_of_zombie = start_offset_of(root, r);

      // Every answer, by who gave it and when. A success the frozen broker
      // gives after the thaw is one it decided after the thaw, when its
      // lease had lapsed, unless the request was in flight at the stop and
      // its offsets lie below its successor's start: then the broker may
      // have decided it (synced, lease valid) right before the stop, with
      // the answer still inside the process when it froze, and the record
      // is at its offset in the log (checked below). A request sent after
      // the stop (every thread stopped; 2 ms of margin) was read after the
      // thaw, so it must never succeed there.
      std::map<int64_t, sent_record> acked;
      int double_acks = 0, in_flight = 0, in_flight_refused = 0, after_cont = 0, zombie_acks = 0, late = 0;
      std::set<std::string> sent_keys;
      std::ostringstream bad;
      for (auto& pr : producers) {
        if (pr->partition() != p)
          continue;
        for (const auto& a : pr->attempts()) {
          for (const auto& r : a.records)
            sent_keys.insert(r.key);
          if (pr->path() == produce_path::owner_direct) {
            if (a.sent < stop_at && a.answered > cont_at) {
              ++in_flight;
              in_flight_refused += a.status != 200 ? 1 : 0;
            }
            if (a.answered > cont_at) {
              ++after_cont;
              const int64_t last = a.base + static_cast<int64_t>(a.records.size()) - 1;
              if (a.status == 200 && a.sent < stop_at + 2ms && end_of_zombie >= 0 && last < end_of_zombie) {
                ++late;
              } else if (a.status == 200) {
                ++zombie_acks;
                bad << "  " << pr->prefix() << " sent " << std::chrono::duration<double>(a.sent - stop_at).count()
                    << " s after the stop, acknowledged at offsets " << a.base << ".." << last
                    << " (its successor starts at " << end_of_zombie << ")\n";
              }
            }
          }
          if (a.status != 200)
            continue;
          for (size_t k = 0; k < a.records.size(); ++k)
            if (!acked.emplace(a.base + static_cast<int64_t>(k), a.records[k]).second)
              ++double_acks;
        }
      }
      total_acked += static_cast<int>(acked.size());
      trial_in_flight += in_flight;
      trial_after_cont += after_cont;
      trial_zombie_acks += zombie_acks;
      trial_late += late;
      story << where << "acknowledged " << acked.size() << " records, its successor starts at " << end_of_zombie
            << "; straight to the frozen broker: " << in_flight << " in flight at the stop answered after the thaw ("
            << in_flight_refused << " refused, " << late << " acknowledged before the stop), " << after_cont
            << " answered after the thaw, " << zombie_acks << " acknowledged after it\n";
      if (zombie_acks > 0)
        problem(where + std::to_string(zombie_acks) + " acknowledgement(s) by the thawed broker:\n" + bad.str());
      if (double_acks > 0)
        problem(where + std::to_string(double_acks) + " offset(s) acknowledged twice");

      // The log as its owner reads it: every acknowledged record at its
      // offset, no hole (read_partition requires contiguous offsets), no
      // record twice, nothing that was never sent.
      if (!wait_until([&] { return who_serves(c.client(*owner), topic, p).first == 200; }, 15s)) {
        auto a = call(c.client(*owner), "GET", "/v1/topics/" + topic + "/partitions/" + std::to_string(p) + "/records?max_records=1");
        problem(where + "its owner " + now_owners[p] + " does not serve it 15 s after the thaw: " + a.raw);
        continue;
      }
      auto read = read_partition(c.client(*owner), topic, p);
      auto l = count_loss(acked, read);
      if (!l.ok())
        problem(where + l.text());
      std::map<std::string, int64_t> first_at;
      int twice = 0, unknown = 0;
      snapshot snap{topic, p, {}, read.log_end};
      for (const auto& [off, r] : read.records) {
        auto rec = as_sent(r);
        twice += first_at.emplace(rec.key, off).second ? 0 : 1;
        unknown += sent_keys.count(rec.key) ? 0 : 1;
        snap.records[off] = rec;
      }
      if (read.log_start != 0)
        problem(where + "the log starts at " + std::to_string(read.log_start));
      if (twice > 0)
        problem(where + std::to_string(twice) + " record(s) in the log twice");
      if (unknown > 0)
        problem(where + std::to_string(unknown) + " record(s) in the log that no producer sent");
      snapshots.push_back(std::move(snap));
    }
    std::printf("zombie trial %d/%d: %s frozen%s%s for %.2f s, handed over after %.2f s, writes again %.2f s later; %d in flight at the stop "
                "answered after the thaw (%d acknowledged before the stop), %d answers after the thaw, %d acknowledged "
                "after it%s\n",
                t + 1, trials, c.id(zombie).c_str(), froze_leader ? " (leader)" : "",
                plan.mid_move ? (" mid-move (" + (moved_partition < 0 ? std::string{"not submitted"}
                                                  : move_row.is_null() ? std::string{"no row"}
                                                                       : move_row.value("state", "?")) + ")").c_str()
                              : "",
                std::chrono::duration<double>(cont_at - stop_at).count(),
                std::chrono::duration<double>(over_at - stop_at).count(), second_write_s, trial_in_flight, trial_late, trial_after_cont,
                trial_zombie_acks, problems.empty() ? "" : "; FAILED:");
    // The problems on the trial's own line too: a CI log that keeps only
    // the head and tail of the output still says what went wrong.
    for (const auto& pr : problems)
      std::printf("  - %s\n", pr.substr(0, 400).c_str());
    total_late += trial_late;
    total_in_flight += trial_in_flight;
    total_after_cont += trial_after_cont;
    total_zombie_acks += trial_zombie_acks;
    std::fflush(stdout);
    if (!problems.empty()) {
      std::string all;
      for (const auto& pr : problems)
        all += "- " + pr + "\n";
      FAIL_CHECK(story.str() << "problems:\n" << all << log_tails(c, 12000));
    }
  }

  // The end: every partition of every trial reads the same from its owner
  // now (several were handed over again when their new owner was frozen in
  // a later trial): the chain of epochs reads consistently.
  int differ = 0;
  std::string first_diff;
  for (const auto& s : snapshots) {
    auto owner = owner_seen_by(c, leader, s.topic, s.partition);
    if (owner && who_serves(c.client(*owner), s.topic, s.partition).first != 200)
      owner.reset();
    if (!owner) {
      ++differ;
      auto a = call(c.client(leader), "GET",
                    "/v1/topics/" + s.topic + "/partitions/" + std::to_string(s.partition) + "/records?max_records=1");
      if (first_diff.empty())
        first_diff = s.topic + "/" + std::to_string(s.partition) + ": no broker serves it: " + std::to_string(a.status)
                     + " " + a.raw;
      continue;
    }
    auto read = read_partition(c.client(*owner), s.topic, s.partition);
    std::map<int64_t, sent_record> now;
    for (const auto& [off, r] : read.records)
      now[off] = as_sent(r);
    bool same = read.log_end == s.log_end && now.size() == s.records.size();
    for (auto it = now.cbegin(), jt = s.records.cbegin(); same && it != now.end(); ++it, ++jt)
      same = it->first == jt->first && it->second.key == jt->second.key && it->second.value == jt->second.value;
    if (!same) {
      ++differ;
      if (first_diff.empty())
        first_diff = s.topic + "/" + std::to_string(s.partition) + " read " + std::to_string(now.size())
                     + " records to " + std::to_string(read.log_end) + ", at its trial's end "
                     + std::to_string(s.records.size()) + " to " + std::to_string(s.log_end);
    }
  }
  std::printf("zombie: %d trials in %.1f s, %d acknowledged records, %d requests in flight at a stop answered after "
              "the thaw (%d acknowledged before the stop), %d answers after a thaw, %d acknowledged after it; %zu "
              "partitions re-read, %d differ\n",
              trials, seconds_since(test_start), total_acked, total_in_flight, total_late, total_after_cont,
              total_zombie_acks,
              snapshots.size(), differ);
  INFO("first difference: " << first_diff);
  CHECK(differ == 0);
  CHECK(total_zombie_acks == 0);
}
