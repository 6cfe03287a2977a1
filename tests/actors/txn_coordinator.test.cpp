// The transaction coordinator actor against a stand-in metadata log: a
// refusal decided on an image that has not applied an entry another broker
// committed is confirmed by writing the record unchanged at its version;
// refused, it is decided again once the image holds the newer record
// (docs/transactions.md "Answers decided without a write are confirmed").

#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <memory>
#include <mutex>
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

  caf::behavior behavior(caf::event_based_actor*) {
    return {
      [this](propose_atom, txn_atom, const std::string& payload, bool) -> caf::result<int64_t, int64_t> {
        std::lock_guard<std::mutex> g{mtx};
        auto p = raft::payload_from_json(nlohmann::json::parse(payload, nullptr, false));
        if (!p || !std::holds_alternative<raft::txn_entry>(*p))
          return make_coded_error(400, "invalid_request", "not a txn entry");  // fails the test's answer
        const auto& e = std::get<raft::txn_entry>(*p);
        for (auto& [id, rec] : lagging)
          applied[id] = rec;
        lagging.clear();
        expected.push_back(e.expect_version);
        auto index = next_index++;
        auto it = applied.find(e.transactional_id);
        uint64_t current = it == applied.end() ? 0 : it->second.version;
        bool refused = current != e.expect_version;
        if (!refused) {
          applied[e.transactional_id] = e.record;
          applied[e.transactional_id].version = index;
        }
        view->set_transactions(std::make_shared<const txn_image>(applied));
        if (refused)
          return make_coded_error(409, "txn_state_changed", "not at the expected version");
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
  coordinator_fixture() : cfg(make_system_config({})), sys(*cfg), self(sys) {
    raft_stand_in = sys.spawn([this](caf::event_based_actor* a) { return log.behavior(a); });
    auto raft = caf::actor_cast<raft_actor>(raft_stand_in);
    txn_settings s;
    s.broker_id = "b1";
    s.owners = log.view;
    s.raft = raft;
    s.tick = 1h;  // no timeouts or endings in these tests
    txn_effects fx;
    fx.write_marker = [](const txn_record&, const cluster::txn_partition&, std::function<void(std::string)> done) {
      done({});
    };
    fx.commit_offsets = [](const std::string&, const std::vector<cluster::txn_offset>&,
                           std::function<void(std::string)> done) { done({}); };
    fx.coordinates = [](const std::string&) { return true; };
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
  CHECK(f.log.applied["app"].offsets.empty());
  CHECK(f.log.applied["app"].groups.empty());
}
