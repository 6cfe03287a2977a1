// Transactional ids in the metadata log (docs/transactions.md "Coordinator
// state"): a txn entry writes one id's whole record as a compare-and-set on
// its version, snapshots keep the records, and the JSON is strict.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core_fixture.hpp"
#include "raft/ownership_state.hpp"

using namespace moonmq::raft;
using moonmq::cluster::txn_record;
using moonmq::cluster::txn_state;

namespace {

struct txn_log {
  ownership_state s;
  uint64_t i = 0;
  /// Applies `p` at the next index; true when it changed the image.
  bool apply(entry_payload p) {
    REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok());
    return !s.refused(log_index{i});
  }
};

txn_entry entry(uint64_t expect, txn_state state, int16_t epoch = 0) {
  txn_entry e;
  e.transactional_id = "app-1";
  e.expect_version = expect;
  e.record.producer_id = 4242;
  e.record.producer_epoch = epoch;
  e.record.state = state;
  e.record.timeout_ms = 30000;
  e.record.started_ms = state == txn_state::ongoing ? 1733356800000 : 0;
  if (state == txn_state::ongoing) {
    e.record.partitions = {{"orders", 0}, {"orders", 3}};
    e.record.groups = {"g"};
    e.record.offsets = {{"g", "in", 1, 42, "meta"}};
  }
  return e;
}

}  // namespace

TEST_CASE("a txn entry applies only at the version it expects, and the record's version is its index",
          "[raft][metadata][txn]") {
  txn_log f;
  CHECK_FALSE(f.apply(entry(3, txn_state::empty)));  // an unknown id is at version 0
  CHECK(f.s.transactions().empty());
  REQUIRE(f.apply(entry(0, txn_state::empty)));
  REQUIRE(f.s.transactions().at("app-1").version == 2);
  CHECK_FALSE(f.apply(entry(0, txn_state::ongoing)));  // a second creation loses
  REQUIRE(f.apply(entry(2, txn_state::ongoing)));
  const auto& rec = f.s.transactions().at("app-1");
  CHECK(rec.version == 4);
  CHECK(rec.state == txn_state::ongoing);
  CHECK(rec.partitions.size() == 2);
  // Two coordinators that both read version 4: the first in log order wins.
  REQUIRE(f.apply(entry(4, txn_state::prepare_commit)));
  CHECK_FALSE(f.apply(entry(4, txn_state::prepare_abort, 1)));
  CHECK(f.s.transactions().at("app-1").state == txn_state::prepare_commit);
}

TEST_CASE("transactions survive a snapshot and the wire, and malformed txn JSON is refused", "[raft][metadata][txn][wire]") {
  txn_log f;
  REQUIRE(f.apply(entry(0, txn_state::empty)));
  REQUIRE(f.apply(entry(1, txn_state::ongoing, 3)));
  auto snap = f.s.to_snapshot();
  auto parsed = snapshot_from_json(to_json(snap));
  REQUIRE(parsed.ok());
  CHECK(*parsed == snap);
  ownership_state copy;
  copy.load(*parsed);
  CHECK(copy == f.s);
  CHECK(copy.transactions().at("app-1").offsets.at(0).metadata == "meta");
  CHECK(copy.transactions().at("app-1").version == 2);
  // Snapshots of earlier versions have no transactions.
  auto older = to_json(snap);
  older.erase("transactions");
  REQUIRE(snapshot_from_json(older).ok());
  CHECK(snapshot_from_json(older)->transactions.empty());
  auto e = entry(9, txn_state::ongoing, 5);
  auto wire = entry_from_json(to_json(log_entry{term{2}, log_index{7}, e}));
  REQUIRE(wire.ok());
  CHECK(std::get<txn_entry>(wire->payload) == e);
  auto bad = to_json(log_entry{term{2}, log_index{7}, e});
  bad["state"] = "dead";
  auto refused = entry_from_json(bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.err().message.find("state") != std::string::npos);
  bad = to_json(log_entry{term{2}, log_index{7}, e});
  bad["producer_epoch"] = 40000;
  CHECK_FALSE(entry_from_json(bad).ok());
  bad = to_json(log_entry{term{2}, log_index{7}, e});
  bad["transactional_id"] = "";
  CHECK_FALSE(entry_from_json(bad).ok());
  bad = to_json(log_entry{term{2}, log_index{7}, e});
  bad["offsets"][0].erase("offset");
  CHECK_FALSE(entry_from_json(bad).ok());
  auto dup = to_json(snap);
  dup["transactions"].push_back(dup["transactions"][0]);
  CHECK_FALSE(snapshot_from_json(dup).ok());
}

TEST_CASE("an expired id's remove entry takes its record out at the version it expects, and survives the wire",
          "[raft][metadata][txn][wire]") {
  txn_log f;
  auto created = entry(0, txn_state::empty);
  created.record.updated_ms = 1733356800123;
  REQUIRE(f.apply(created));
  CHECK(f.s.transactions().at("app-1").updated_ms == 1733356800123);
  auto remove = entry(7, txn_state::empty);
  remove.remove = true;
  CHECK_FALSE(f.apply(remove));  // not at the id's version (1): the record stays
  CHECK(f.s.transactions().count("app-1") == 1);
  remove.expect_version = 1;
  REQUIRE(f.apply(remove));
  CHECK(f.s.transactions().empty());
  CHECK(f.apply(entry(0, txn_state::empty)));  // the id starts afresh
  // JSON: "remove" and "updated_ms" round-trip; records without updated_ms still read.
  auto back = payload_from_json(to_json(entry_payload{remove}));
  REQUIRE(back);
  CHECK(std::get<txn_entry>(*back) == remove);
  auto j = to_json(entry_payload{created});
  CHECK(j["updated_ms"] == 1733356800123);
  j.erase("updated_ms");
  auto old = payload_from_json(j);
  REQUIRE(old);
  CHECK(std::get<txn_entry>(*old).record.updated_ms == 0);
}
