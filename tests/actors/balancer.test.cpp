// The balance loop's shared-storage failover (docs/balancer.md "Failover
// (shared storage)") against a stand-in cluster state: on the Raft leader,
// once a fenced broker has been silent for the wait, it proposes one owner
// entry per partition of that broker, conditional on the epoch the image
// held and never forwarded; a follower, an unfenced or a recently heard
// broker, and a cluster without shared storage get none.

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/balancer.hpp"
#include "actors/errors.hpp"
#include "actors/registry.hpp"
#include "actors/system.hpp"

using namespace moonmq;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

struct proposal {
  std::string topic;
  int32_t partition = 0;
  std::string owner;
  int64_t expect_epoch = 0;
  bool forward = true;
};

/// The metadata image the loop reads, and the log behind it: a conditional
/// owner entry applies when the partition is still at the epoch it
/// expects (raft::ownership_state's compare-and-set), and is refused with
/// 409 owner_epoch_changed otherwise.
struct fake_log {
  std::mutex mtx;
  std::shared_ptr<owner_view> view = std::make_shared<owner_view>();
  owner_map owners;
  epoch_map epochs;
  move_image moves;
  broker_standing standing;
  std::vector<proposal> proposals;

  void publish() {
    view->set(std::make_shared<const owner_map>(owners), std::make_shared<const topic_image>(),
              std::make_shared<const std::string>("{}"), std::make_shared<const broker_standing>(standing),
              std::make_shared<const epoch_map>(epochs), std::make_shared<const move_image>(moves));
  }
  int64_t epoch_of(const cluster::topic_partition& tp) {
    auto e = epochs.find(tp);
    return e == epochs.end() ? 1 : e->second;
  }

  caf::behavior behavior(caf::event_based_actor*) {
    return {
      [](claim_atom) { return int64_t{5}; },
      [](get_atom) -> caf::result<int64_t, std::string> { return {int64_t{5}, std::string{"b1"}}; },
      [this](owner_atom, const std::string& topic, int32_t partition, const std::string& owner, int64_t,
             int64_t expect_epoch, bool forward) -> caf::result<bool> {
        std::lock_guard<std::mutex> g{mtx};
        proposals.push_back({topic, partition, owner, expect_epoch, forward});
        cluster::topic_partition tp{topic, partition};
        if (epoch_of(tp) != expect_epoch)
          return make_coded_error(fault::conflict, "owner_epoch_changed", "the partition's owner epoch moved on");
        owners[tp] = owner;
        epochs[tp] = expect_epoch + 1;
        publish();
        return true;
      },
    };
  }
};

caf::behavior no_moves(caf::event_based_actor*) {
  return {[](list_atom) { return std::string{"[]"}; }};
}

struct balancer_fixture {
  explicit balancer_fixture(bool shared_storage = true)
      : cfg(make_system_config({})), sys(*cfg), self(sys) {
    {
      std::lock_guard<std::mutex> g{log.mtx};
      log.owners = {{{"t", 0}, "b3"}, {{"t", 1}, "b3"}, {{"t", 2}, "b3"}, {{"__groups", 0}, "b3"}, {{"u", 0}, "b1"}};
      log.epochs = {{{"t", 1}, 4}, {{"__groups", 0}, 7}};
      move_info m;
      m.tp = {"t", 2};
      m.from = "b3";
      m.to = "b1";
      m.state = "copying";  // unfinished: t-2 waits for it to end
      log.moves["m1"] = m;
      log.standing.fenced = {"b3"};
      log.publish();
    }
    raft->set(leader(1000));
    state_stand_in = sys.spawn([this](caf::event_based_actor* a) { return log.behavior(a); });
    reassigner_stand_in = sys.spawn(no_moves);
    balancer_settings s;
    s.broker_id = "b1";  // config.enabled stays false: failover runs anyway
    s.image = log.view;
    s.raft = raft;
    s.shared_storage = shared_storage;
    s.failover_wait_ms = 3500;
    s.local_loads = [](std::function<void(json)> done) {
      done(json{{"broker_id", "b1"}, {"partitions", json::array()}});
    };
    balancer = spawn_balancer(sys, std::move(s), nullptr, caf::actor_cast<cluster_state_actor>(state_stand_in),
                              caf::actor_cast<reassigner_actor>(reassigner_stand_in), registry);
  }
  ~balancer_fixture() {
    caf::anon_send_exit(balancer, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(state_stand_in, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(reassigner_stand_in, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
  }
  static raft_status leader(int64_t b3_silent_ms) {
    raft_status r;
    r.term = 5;
    r.leader = "b1";
    r.role = "leader";
    r.is_leader = true;
    r.silent_ms = {{"b3", b3_silent_ms}};
    return r;
  }
  std::vector<proposal> proposals() {
    std::lock_guard<std::mutex> g{log.mtx};
    return log.proposals;
  }
  /// Waits up to `limit` for `n` proposals.
  std::vector<proposal> wait_for(size_t n, std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (proposals().size() < n && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(50ms);
    return proposals();
  }
  json status() {
    json out;
    self->request(balancer, 10s, get_atom::value)
      .receive([&](std::string& text) { out = json::parse(text); }, [&](caf::error& e) { FAIL(caf::to_string(e)); });
    return out;
  }

  fake_log log;
  std::shared_ptr<raft_view> raft = std::make_shared<raft_view>();
  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  registry_actor registry = spawn_registry(sys, 1s);
  caf::actor state_stand_in;
  caf::actor reassigner_stand_in;
  balancer_actor balancer;
};

}  // namespace

TEST_CASE("balancer: the leader hands a fenced broker's partitions over by conditional owner entries once it has "
          "been silent for the wait",
          "[balancer][failover]") {
  balancer_fixture f;
  // Fenced, but heard from 1 s ago on this leader: nothing yet.
  std::this_thread::sleep_for(2500ms);
  CHECK(f.proposals().empty());

  f.raft->set(balancer_fixture::leader(3600));
  auto got = f.wait_for(3, 10s);
  std::this_thread::sleep_for(300ms);  // nothing more comes
  got = f.proposals();
  REQUIRE(got.size() == 3);  // t-0, t-1 and __groups-0; t-2's move is unfinished
  std::map<std::string, int64_t> expected{{"__groups-0", 7}, {"t-0", 1}, {"t-1", 4}};
  for (const auto& p : got) {
    auto name = p.topic + "-" + std::to_string(p.partition);
    INFO(name);
    REQUIRE(expected.count(name));
    CHECK(p.expect_epoch == expected[name]);
    CHECK(p.owner == "b1");
    CHECK_FALSE(p.forward);
  }
  auto [owner, epoch] = f.log.view->owner_and_epoch({"t", 1});
  CHECK(owner == "b1");
  CHECK(epoch == 5);

  // The answers show in the status, each row with its reason and epoch.
  json rows;
  for (int i = 0; i < 100; ++i) {
    auto st = f.status();
    rows = st["failover"]["last"].is_object() ? st["failover"]["last"]["executed"] : json::array();
    size_t applied = 0;
    for (const auto& r : rows)
      applied += r.value("result", "") == "applied" ? 1 : 0;
    if (applied == 3)
      break;
    std::this_thread::sleep_for(50ms);
  }
  size_t failover_rows = 0;
  for (const auto& r : rows) {
    if (r.value("type", "") != "FAILOVER")
      continue;
    ++failover_rows;
    CHECK(r.value("result", "") == "applied");
    CHECK(r.value("goal", "") == "failover");
    CHECK(r.value("from", "") == "b3");
    CHECK(r.value("reason", "").find("broker b3 is fenced and silent for") != std::string::npos);
  }
  CHECK(failover_rows == 3);

  // Once the move ends, t-2 is handed over too, at the epoch then held.
  {
    std::lock_guard<std::mutex> g{f.log.mtx};
    f.log.moves["m1"].state = "failed";
    f.log.epochs[{"t", 2}] = 3;
    f.log.publish();
  }
  got = f.wait_for(4, 10s);
  REQUIRE(got.size() == 4);
  CHECK(got[3].topic == "t");
  CHECK(got[3].partition == 2);
  CHECK(got[3].expect_epoch == 3);
}

TEST_CASE("balancer: no failover on a follower, for a broker that answered again, or without shared storage",
          "[balancer][failover]") {
  SECTION("a follower") {
    balancer_fixture f;
    auto r = balancer_fixture::leader(60000);
    r.is_leader = false;
    r.role = "follower";
    f.raft->set(r);
    std::this_thread::sleep_for(2500ms);
    CHECK(f.proposals().empty());
  }
  SECTION("local storage") {
    balancer_fixture f(false);
    f.raft->set(balancer_fixture::leader(60000));
    std::this_thread::sleep_for(2500ms);
    CHECK(f.proposals().empty());
  }
  SECTION("an unfenced broker") {
    balancer_fixture f;
    {
      std::lock_guard<std::mutex> g{f.log.mtx};
      f.log.standing.fenced.clear();
      f.log.publish();
    }
    f.raft->set(balancer_fixture::leader(60000));
    std::this_thread::sleep_for(2500ms);
    CHECK(f.proposals().empty());
  }
}
