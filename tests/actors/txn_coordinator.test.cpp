// The transaction coordinator actor against a stand-in metadata log: a
// refusal decided on an image that has not applied an entry another broker
// committed is confirmed by writing the record unchanged at its version;
// refused, it is decided again once the image holds the newer record
// (docs/transactions.md "Answers decided without a write are confirmed").

#include <catch2/catch.hpp>

#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "actors/image.hpp"
#include "actors/registry.hpp"
#include "actors/system.hpp"
#include "actors/txn_coordinator.hpp"
#include "raft/types.hpp"

using namespace moonmq;
using namespace std::chrono_literals;
using cluster::txn_error;
using cluster::txn_record;
using cluster::txn_request;

namespace {

/// A metadata log of `txn` entries: `lagging` holds records committed by
/// another broker that this broker's image (`view`) has not applied yet.
/// Every proposal first applies them (log order: they were committed
/// before it), then compare-and-sets the proposed record as
/// raft::ownership_state does, answering (index, term) or 409
/// txn_state_changed.
struct fake_log {
  std::mutex mtx;
  std::shared_ptr<owner_view> view = std::make_shared<owner_view>();
  txn_image applied;
  txn_image lagging;
  uint64_t next_index = 100;
  std::vector<uint64_t> expected;  ///< the expect_version of every proposal, in order
  /// How many of the next proposals, applied or refused as usual, are
  /// answered as the raft node answers an entry that arrived inside an
  /// installed snapshot (503 proposal_outcome_unknown).
  int unknown_outcomes = 0;

  caf::behavior behavior(caf::event_based_actor*) {
    return {
      [this](propose_atom, txn_atom, const std::string& payload, bool) -> caf::result<int64_t, int64_t> {
        std::lock_guard<std::mutex> g{mtx};
        auto p = raft::payload_from_json(nlohmann::json::parse(payload, nullptr, false));
        if (!p || !std::holds_alternative<raft::txn_entry>(*p))
          return make_coded_error(fault::invalid, "invalid_request", "not a txn entry");  // fails the test's answer
        const auto& e = std::get<raft::txn_entry>(*p);
        for (auto& [id, rec] : lagging)
          applied[id] = rec;
        lagging.clear();
        expected.push_back(e.expect_version);
        auto index = next_index++;
        auto it = applied.find(e.transactional_id);
        uint64_t current = it == applied.end() ? 0 : it->second.version;
        bool refused = current != e.expect_version;
        if (!refused && e.remove) {
          applied.erase(e.transactional_id);
        } else if (!refused) {
          applied[e.transactional_id] = e.record;
          applied[e.transactional_id].version = index;
        }
        view->set_transactions(std::make_shared<const txn_image>(applied));
        if (unknown_outcomes > 0) {
          --unknown_outcomes;
          return make_coded_error(fault::unavailable, "proposal_outcome_unknown", "applied through a snapshot");
        }
        if (refused)
          return make_coded_error(fault::conflict, "txn_state_changed", "not at the expected version");
        return {static_cast<int64_t>(index), int64_t{1}};
      },
    };
  }
};

txn_record ongoing(std::vector<std::string> groups, uint64_t version) {
  txn_record r;
  r.producer_id = 7;
  r.producer_epoch = 2;
  r.state = cluster::txn_state::ongoing;
  r.started_ms = 1;
  r.timeout_ms = 60000;
  r.groups = std::move(groups);
  r.version = version;
  return r;
}

txn_request offset_commit() {
  txn_request r;
  r.what = txn_request::kind::offset_commit;
  r.transactional_id = "app";
  r.producer_id = 7;
  r.producer_epoch = 2;
  r.group = "g";
  r.offsets.push_back({"g", "t", 0, 42, ""});
  return r;
}

struct coordinator_fixture {
  explicit coordinator_fixture(std::chrono::milliseconds complete_linger = 20ms,
                               std::chrono::milliseconds tick = 1h,
                               std::chrono::milliseconds id_expiration = std::chrono::hours(24 * 7))
      : cfg(make_system_config({})), sys(*cfg), self(sys) {
    raft_stand_in = sys.spawn([this](caf::event_based_actor* a) { return log.behavior(a); });
    auto raft = caf::actor_cast<raft_actor>(raft_stand_in);
    txn_settings s;
    s.broker_id = "b1";
    s.owners = log.view;
    s.raft = raft;
    s.tick = tick;  // by default none: no timeouts, and endings finish in their own round
    s.complete_linger = complete_linger;
    s.id_expiration = id_expiration;
    txn_effects fx;
    fx.write_marker = [this](const txn_record&, const cluster::txn_partition& p,
                             std::function<void(std::string)> done) {
      {
        std::lock_guard<std::mutex> g{log.mtx};
        markers.push_back(p.topic + "/" + std::to_string(p.partition));
      }
      done({});
    };
    fx.commit_offsets = [](const std::string&, const std::vector<cluster::txn_offset>&,
                           std::function<void(std::string)> done) { done({}); };
    fx.coordinates = [this](const std::string&) { return coordinated.load(); };
    fx.new_producer_id = [] { return int64_t{7}; };
    coordinator = spawn_txn_coordinator(sys, std::move(s), std::move(fx), registry);
  }
  ~coordinator_fixture() {
    caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(raft_stand_in, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
  }
  cluster::txn_answer ask(txn_request req) {
    cluster::txn_answer out;
    out.error = txn_error::coordinator_not_available;
    self->request(coordinator, 10s, txn_atom::value, std::move(req))
      .receive([&](cluster::txn_answer& a) { out = std::move(a); }, [&](caf::error& e) { FAIL(caf::to_string(e)); });
    return out;
  }
  /// Both the image and the log hold `rec` for "app".
  void publish(const txn_record& rec) {
    std::lock_guard<std::mutex> g{log.mtx};
    log.applied["app"] = rec;
    log.view->set_transactions(std::make_shared<const txn_image>(log.applied));
  }

  fake_log log;
  std::vector<std::string> markers;  ///< written, in order (under log.mtx)
  std::atomic<bool> coordinated{true};  ///< what effects.coordinates answers
  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  registry_actor registry = spawn_registry(sys, 1s);
  caf::actor raft_stand_in;
  txn_actor coordinator;
};

}  // namespace

TEST_CASE("txn coordinator: a TxnOffsetCommit refused on a stale image is decided again once the image catches up",
          "[txn][coordinator]") {
  coordinator_fixture f;
  f.publish(ongoing({}, 10));  // this broker's image: the group is not added yet
  {
    std::lock_guard<std::mutex> g{f.log.mtx};
    f.log.lagging["app"] = ongoing({"g"}, 11);  // AddOffsetsToTxn, committed at the id's coordinator
  }
  auto a = f.ask(offset_commit());
  INFO(a.message);
  CHECK(a.error == txn_error::none);
  std::lock_guard<std::mutex> g{f.log.mtx};
  // The confirmation at the stale version (refused), then the write at the newer one.
  CHECK(f.log.expected == std::vector<uint64_t>{10, 11});
  REQUIRE(f.log.applied["app"].offsets.size() == 1);
  CHECK(f.log.applied["app"].offsets[0].offset == 42);
}

TEST_CASE("txn coordinator: a refusal that holds on a fresh image is answered once confirmed",
          "[txn][coordinator]") {
  coordinator_fixture f;
  f.publish(ongoing({}, 10));  // the group really was never added
  auto a = f.ask(offset_commit());
  CHECK(a.error == txn_error::invalid_txn_state);
  std::lock_guard<std::mutex> g{f.log.mtx};
  CHECK(f.log.expected == std::vector<uint64_t>{10});  // the confirmation: the record unchanged
  CHECK(f.log.applied["app"].updated_ms == 0);          // not counted as activity of the id
  CHECK(f.log.applied["app"].offsets.empty());
  CHECK(f.log.applied["app"].groups.empty());
}

namespace {

txn_request end_txn(bool commit) {
  txn_request r;
  r.what = txn_request::kind::end;
  r.transactional_id = "app";
  r.producer_id = 7;
  r.producer_epoch = 2;
  r.commit = commit;
  return r;
}

txn_request add_partition(const std::string& topic, int32_t partition) {
  txn_request r;
  r.what = txn_request::kind::add_partitions;
  r.transactional_id = "app";
  r.producer_id = 7;
  r.producer_epoch = 2;
  r.partitions.push_back({topic, partition});
  return r;
}

std::string status_of(coordinator_fixture& f) {
  std::string out;
  f.self->request(f.coordinator, 10s, status_atom::value)
    .receive([&](std::string& s) { out = std::move(s); }, [&](caf::error& e) { FAIL(caf::to_string(e)); });
  return out;
}

/// Publishes an open transaction of "app" (version 10) on `partitions` and
/// ends it with EndTxn (commit or abort), which must succeed.
void end_open_transaction(coordinator_fixture& f, std::vector<cluster::txn_partition> partitions, bool commit) {
  auto rec = ongoing({}, 10);
  rec.partitions = std::move(partitions);
  f.publish(rec);
  CHECK(f.ask(end_txn(commit)).error == txn_error::none);
}

}  // namespace

TEST_CASE("txn coordinator: the completion of an ending rides on the id's next request's write",
          "[txn][coordinator]") {
  coordinator_fixture f{10s};  // a linger no test run outlasts: only the next request can complete it
  end_open_transaction(f, {{"t", 0}, {"t", 1}}, true);
  {
    // Answered once both markers are written; the record is still prepared.
    std::lock_guard<std::mutex> g{f.log.mtx};
    CHECK(f.markers == std::vector<std::string>{"t/0", "t/1"});
    CHECK(f.log.applied["app"].state == cluster::txn_state::prepare_commit);
    CHECK(f.log.expected == std::vector<uint64_t>{10});
  }
  auto added = f.ask(add_partition("t", 2));
  CHECK(added.error == txn_error::none);
  std::lock_guard<std::mutex> g{f.log.mtx};
  // Two writes for the ending and the next transaction's first change, not
  // three: the add_partitions write went at the prepared record's version.
  CHECK(f.log.expected == std::vector<uint64_t>{10, 100});
  const auto& now = f.log.applied["app"];
  CHECK(now.state == cluster::txn_state::ongoing);
  REQUIRE(now.partitions.size() == 1);
  CHECK(now.partitions[0].partition == 2);
  CHECK(nlohmann::json::parse(status_of(f))["endings_finished"] == 1);
}

TEST_CASE("txn coordinator: without a next request the completed record is written alone after complete_linger",
          "[txn][coordinator]") {
  coordinator_fixture f{20ms};
  end_open_transaction(f, {{"t", 0}}, false);
  cluster::txn_state state = cluster::txn_state::prepare_abort;
  for (int i = 0; i < 500 && state != cluster::txn_state::complete_abort; ++i) {
    std::this_thread::sleep_for(10ms);
    std::lock_guard<std::mutex> g{f.log.mtx};
    state = f.log.applied["app"].state;
  }
  CHECK(state == cluster::txn_state::complete_abort);
  std::lock_guard<std::mutex> g{f.log.mtx};
  CHECK(f.log.expected == std::vector<uint64_t>{10, 100});
  CHECK(f.markers == std::vector<std::string>{"t/0"});
}

TEST_CASE("txn coordinator: a request the completed record refuses waits for the completion, then is answered",
          "[txn][coordinator]") {
  coordinator_fixture f{10s};
  end_open_transaction(f, {{"t", 0}}, true);
  auto stale = add_partition("t", 1);
  stale.producer_epoch = 1;  // a zombie of the producer: fenced, no write of its own
  CHECK(f.ask(stale).error == txn_error::invalid_producer_epoch);
  std::lock_guard<std::mutex> g{f.log.mtx};
  // The completion alone, then the refusal confirmed on the completed record.
  CHECK(f.log.expected == std::vector<uint64_t>{10, 100, 101});
  CHECK(f.log.applied["app"].state == cluster::txn_state::complete_commit);
}

TEST_CASE("txn coordinator: an operator's abort is answered once its markers are written, and only where the id "
          "is coordinated", "[txn][coordinator]") {
  coordinator_fixture f{10s};
  auto rec = ongoing({}, 10);
  rec.partitions = {{"t", 0}, {"t", 1}};
  f.publish(rec);
  txn_request abort;
  abort.what = txn_request::kind::abort;
  abort.transactional_id = "app";
  auto a = f.ask(abort);
  CHECK(a.error == txn_error::none);
  CHECK(a.producer_epoch == 3);  // fenced: the producer's epoch was 2
  {
    std::lock_guard<std::mutex> g{f.log.mtx};
    CHECK(f.markers == std::vector<std::string>{"t/0", "t/1"});
    CHECK(f.log.applied["app"].state == cluster::txn_state::prepare_abort);
  }
  CHECK(f.ask(abort).error == txn_error::invalid_txn_state);  // nothing open any more
  f.coordinated = false;
  CHECK(f.ask(abort).error == txn_error::not_coordinator);
}

TEST_CASE("txn coordinator: an id idle past its expiration is removed by a compare-and-set, an open one is kept",
          "[txn][coordinator]") {
  coordinator_fixture f{20ms, 10ms, 1000ms};
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  {
    std::lock_guard<std::mutex> g{f.log.mtx};
    auto idle = ongoing({}, 10);
    idle.state = cluster::txn_state::complete_commit;
    idle.updated_ms = now - 5000;  // written 5 s ago: expired
    f.log.applied["idle"] = idle;
    auto open = ongoing({}, 11);
    open.updated_ms = now - 5000;  // as old, but a transaction is open: kept (its timeout aborts it)
    open.started_ms = now;
    f.log.applied["open"] = open;
    auto unknown_age = idle;
    unknown_age.version = 12;
    unknown_age.updated_ms = 0;  // written before records carried their age: kept
    f.log.applied["old"] = unknown_age;
    f.log.view->set_transactions(std::make_shared<const txn_image>(f.log.applied));
  }
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    std::this_thread::sleep_for(10ms);
    std::lock_guard<std::mutex> g{f.log.mtx};
    gone = f.log.applied.count("idle") == 0;
  }
  CHECK(gone);
  std::lock_guard<std::mutex> g{f.log.mtx};
  CHECK(f.log.applied.count("open") == 1);
  CHECK(f.log.applied.count("old") == 1);
  CHECK(f.log.expected == std::vector<uint64_t>{10});  // one removal, at the idle id's version
}

TEST_CASE("txn coordinator: an EndTxn whose outcome the raft node cannot tell is settled from the image, once",
          "[txn][coordinator]") {
  // The prepared record arrived inside an installed snapshot: the image
  // holds it, so the EndTxn is taken as applied and answered once its
  // markers are written, with no second write and no error.
  coordinator_fixture f{10s};
  {
    std::lock_guard<std::mutex> g{f.log.mtx};
    f.log.unknown_outcomes = 1;
  }
  end_open_transaction(f, {{"t", 0}, {"t", 1}}, true);
  std::lock_guard<std::mutex> g{f.log.mtx};
  CHECK(f.markers == std::vector<std::string>{"t/0", "t/1"});
  CHECK(f.log.expected == std::vector<uint64_t>{10});
  CHECK(f.log.applied["app"].state == cluster::txn_state::prepare_commit);
}

TEST_CASE("txn coordinator: a refused write whose outcome the raft node cannot tell is decided again",
          "[txn][coordinator]") {
  // AddPartitionsToTxn proposed on a stale image (another broker's write is
  // not applied here yet) loses its compare-and-set, and the raft node
  // cannot tell: the image does not hold the write, so the request is
  // decided again against the newer record and applied.
  coordinator_fixture f;
  f.publish(ongoing({}, 10));
  {
    std::lock_guard<std::mutex> g{f.log.mtx};
    f.log.lagging["app"] = ongoing({"g"}, 11);
    f.log.unknown_outcomes = 1;
  }
  auto a = f.ask(add_partition("t", 3));
  INFO(a.message);
  CHECK(a.error == txn_error::none);
  std::lock_guard<std::mutex> g{f.log.mtx};
  CHECK(f.log.expected == std::vector<uint64_t>{10, 11});
  const auto& now = f.log.applied["app"];
  CHECK(now.groups == std::vector<std::string>{"g"});
  REQUIRE(now.partitions.size() == 1);
  CHECK(now.partitions[0].partition == 3);
}
