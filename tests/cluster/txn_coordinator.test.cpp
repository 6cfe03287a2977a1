#include <catch2/catch.hpp>

#include "cluster/txn_coordinator.hpp"

using namespace moonmq::cluster;
using kind = txn_request::kind;

namespace {

txn_request init(int32_t timeout = 60000) {
  txn_request r;
  r.what = kind::init;
  r.transactional_id = "app";
  r.timeout_ms = timeout;
  return r;
}

txn_request of(kind k, const txn_record& rec) {
  txn_request r;
  r.what = k;
  r.transactional_id = "app";
  r.producer_id = rec.producer_id;
  r.producer_epoch = rec.producer_epoch;
  return r;
}

/// Applies a decision's write as the metadata log would (version = `index`).
txn_record applied(const txn_decision& d, uint64_t index) {
  REQUIRE(d.write);
  auto r = *d.write;
  r.version = index;
  return r;
}

}  // namespace

TEST_CASE("InitProducerId gives a new id epoch 0, then bumps the epoch each time", "[cluster][txn]") {
  auto first = decide(init(), std::nullopt, 1000, 77);
  CHECK(first.answer.error == txn_error::none);
  CHECK(first.answer.producer_id == 77);
  CHECK(first.answer.producer_epoch == 0);
  auto rec = applied(first, 5);
  CHECK(rec.state == txn_state::empty);
  auto again = decide(init(), rec, 2000, 99);
  CHECK(again.answer.producer_id == 77);  // the id keeps its producer id
  CHECK(again.answer.producer_epoch == 1);
  rec.producer_epoch = 32764;
  CHECK(decide(init(), rec, 2000, 99).answer.producer_epoch == 32765);
  // From 32765 on a new producer id: a fencing abort always has an epoch
  // left above the producer's.
  rec.producer_epoch = 32765;
  auto exhausted = decide(init(), rec, 2000, 99);
  CHECK(exhausted.answer.producer_id == 99);
  CHECK(exhausted.answer.producer_epoch == 0);
  auto open = rec;
  open.state = txn_state::ongoing;
  CHECK(fencing_abort(open).producer_epoch == 32766);
}

TEST_CASE("a transaction timeout of 0 or less or above the maximum is INVALID_TRANSACTION_TIMEOUT and writes nothing", "[cluster][txn]") {
  for (int32_t t : {0, -5, max_transaction_timeout_ms + 1}) {
    auto d = decide(init(t), std::nullopt, 0, 1);
    CHECK(d.answer.error == txn_error::invalid_transaction_timeout);
    CHECK_FALSE(d.write);
  }
  CHECK(decide(init(max_transaction_timeout_ms), std::nullopt, 0, 1).answer.error == txn_error::none);
}

TEST_CASE("partitions and offsets join an ongoing transaction, EndTxn prepares and completes it", "[cluster][txn]") {
  auto rec = applied(decide(init(), std::nullopt, 0, 7), 1);
  auto add = of(kind::add_partitions, rec);
  add.partitions = {{"orders", 1}, {"orders", 0}, {"orders", 1}};
  auto d = decide(add, rec, 500, 0);
  REQUIRE(d.answer.error == txn_error::none);
  rec = applied(d, 2);
  CHECK(rec.state == txn_state::ongoing);
  CHECK(rec.started_ms == 500);
  CHECK(rec.partitions == std::vector<txn_partition>{{"orders", 0}, {"orders", 1}});
  // Adding the same partitions again writes nothing.
  CHECK_FALSE(decide(add, rec, 600, 0).write);
  // TxnOffsetCommit before AddOffsetsToTxn is refused.
  auto commit_offsets = of(kind::offset_commit, rec);
  commit_offsets.group = "g";
  commit_offsets.offsets = {{"", "in", 0, 42, ""}};
  CHECK(decide(commit_offsets, rec, 700, 0).answer.error == txn_error::invalid_txn_state);
  auto add_offsets = of(kind::add_offsets, rec);
  add_offsets.group = "g";
  rec = applied(decide(add_offsets, rec, 700, 0), 3);
  CHECK(rec.groups == std::vector<std::string>{"g"});
  CHECK(rec.started_ms == 500);  // still the same transaction
  rec = applied(decide(commit_offsets, rec, 800, 0), 4);
  REQUIRE(rec.offsets.size() == 1);
  CHECK(rec.offsets[0].group == "g");
  commit_offsets.offsets = {{"", "in", 0, 50, "m"}};
  rec = applied(decide(commit_offsets, rec, 900, 0), 5);
  REQUIRE(rec.offsets.size() == 1);
  CHECK(rec.offsets[0].offset == 50);  // replaced, not added
  auto end = of(kind::end, rec);
  end.commit = true;
  auto e = decide(end, rec, 1000, 0);
  CHECK(e.ends);
  rec = applied(e, 6);
  CHECK(rec.state == txn_state::prepare_commit);
  CHECK(ending(rec));
  // A retry while it ends, and while it is being completed, is told to wait.
  CHECK(decide(end, rec, 1000, 0).answer.error == txn_error::concurrent_transactions);
  CHECK(decide(add, rec, 1000, 0).answer.error == txn_error::concurrent_transactions);
  CHECK(decide(init(), rec, 1000, 0).answer.error == txn_error::concurrent_transactions);
  rec = completed(rec);
  CHECK(rec.state == txn_state::complete_commit);
  CHECK(rec.partitions.empty());
  CHECK(rec.offsets.empty());
  // A retry after completion answers success; the other outcome is refused.
  auto retry = decide(end, rec, 1100, 0);
  CHECK(retry.answer.error == txn_error::none);
  CHECK_FALSE(retry.write);
  end.commit = false;
  CHECK(decide(end, rec, 1100, 0).answer.error == txn_error::invalid_txn_state);
  // The next transaction starts afresh.
  rec = applied(decide(add, rec, 2000, 0), 8);
  CHECK(rec.state == txn_state::ongoing);
  CHECK(rec.started_ms == 2000);
  CHECK(rec.groups.empty());
}

TEST_CASE("an older epoch or another producer id is fenced and writes nothing", "[cluster][txn]") {
  auto rec = applied(decide(init(), std::nullopt, 0, 7), 1);
  rec = applied(decide(init(), rec, 0, 8), 2);  // epoch 1
  auto zombie = of(kind::add_partitions, rec);
  zombie.producer_epoch = 0;
  zombie.partitions = {{"t", 0}};
  auto d = decide(zombie, rec, 0, 0);
  CHECK(d.answer.error == txn_error::invalid_producer_epoch);
  CHECK_FALSE(d.write);
  zombie.producer_epoch = 1;
  zombie.producer_id = 8;
  CHECK(decide(zombie, rec, 0, 0).answer.error == txn_error::invalid_producer_id_mapping);
  CHECK(decide(zombie, std::nullopt, 0, 0).answer.error == txn_error::invalid_producer_id_mapping);
  auto end = of(kind::end, rec);
  end.producer_epoch = 0;
  CHECK(decide(end, rec, 0, 0).answer.error == txn_error::invalid_producer_epoch);
}

TEST_CASE("EndTxn with nothing open is INVALID_TXN_STATE", "[cluster][txn]") {
  auto rec = applied(decide(init(), std::nullopt, 0, 7), 1);
  auto end = of(kind::end, rec);
  end.commit = true;
  CHECK(decide(end, rec, 0, 0).answer.error == txn_error::invalid_txn_state);
}

TEST_CASE("InitProducerId while a transaction is open aborts it at a bumped epoch", "[cluster][txn]") {
  auto rec = applied(decide(init(), std::nullopt, 0, 7), 1);
  auto add = of(kind::add_partitions, rec);
  add.partitions = {{"t", 0}};
  rec = applied(decide(add, rec, 10, 0), 2);
  auto d = decide(init(), rec, 20, 0);
  CHECK(d.answer.error == txn_error::concurrent_transactions);
  CHECK(d.ends);
  rec = applied(d, 3);
  CHECK(rec.state == txn_state::prepare_abort);
  CHECK(rec.producer_epoch == 1);  // markers at epoch 1 fence epoch 0's batches
  CHECK(rec.partitions == std::vector<txn_partition>{{"t", 0}});
  rec = completed(rec);
  auto again = decide(init(), rec, 30, 0);
  CHECK(again.answer.error == txn_error::none);
  CHECK(again.answer.producer_epoch == 2);
}

TEST_CASE("an ongoing transaction past its timeout is aborted at a bumped epoch", "[cluster][txn]") {
  auto rec = applied(decide(init(1000), std::nullopt, 0, 7), 1);
  auto add = of(kind::add_partitions, rec);
  add.partitions = {{"t", 0}};
  add.group = "";
  rec = applied(decide(add, rec, 5000, 0), 2);
  CHECK_FALSE(timed_out(rec, 6000));  // exactly at the timeout: not yet
  auto t = timed_out(rec, 6001);
  REQUIRE(t);
  CHECK(t->state == txn_state::prepare_abort);
  CHECK(t->producer_epoch == 1);
  CHECK_FALSE(timed_out(completed(*t), 100000));
  // The coordinator's own expire request writes the same abort, or nothing.
  txn_request expire;
  expire.what = kind::expire;
  expire.transactional_id = "app";
  CHECK_FALSE(decide(expire, rec, 6000, 0).write);
  auto e = decide(expire, rec, 6001, 0);
  CHECK(e.ends);
  REQUIRE(e.write);
  CHECK(*e.write == *t);
  CHECK(e.answer.error == txn_error::none);
  CHECK_FALSE(decide(expire, std::nullopt, 6001, 0).write);
}

TEST_CASE("an operator's abort ends an open transaction at a bumped epoch and refuses anything else",
          "[cluster][txn]") {
  txn_request abort;
  abort.what = kind::abort;
  abort.transactional_id = "app";
  CHECK(decide(abort, std::nullopt, 0, 0).answer.error == txn_error::invalid_txn_state);  // unknown id
  auto rec = applied(decide(init(), std::nullopt, 0, 7), 1);
  auto none_open = decide(abort, rec, 0, 0);
  CHECK(none_open.answer.error == txn_error::invalid_txn_state);
  CHECK_FALSE(none_open.write);
  auto add = of(kind::add_partitions, rec);
  add.partitions = {{"t", 0}, {"t", 1}};
  rec = applied(decide(add, rec, 10, 0), 2);
  auto d = decide(abort, rec, 20, 0);
  CHECK(d.ends);
  REQUIRE(d.write);
  CHECK(*d.write == fencing_abort(rec));  // prepare_abort at epoch + 1, same partitions
  CHECK(d.write->partitions.size() == 2);
  CHECK(d.answer.error == txn_error::none);
  CHECK(d.answer.producer_epoch == rec.producer_epoch + 1);
  auto ending = applied(d, 3);
  CHECK(decide(abort, ending, 30, 0).answer.error == txn_error::concurrent_transactions);
  CHECK(decide(abort, completed(ending), 40, 0).answer.error == txn_error::invalid_txn_state);
  // The producer it fenced can no longer add to the transaction.
  CHECK(decide(add, completed(ending), 50, 0).answer.error == txn_error::invalid_producer_epoch);
}
