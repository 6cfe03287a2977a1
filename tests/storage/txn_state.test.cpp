// Transaction state of a partition (docs/transactions.md): open
// transactions, the aborted index, the last stable offset, transaction
// markers (control batches) and the read_committed filter; rebuilt from the
// log on reopen and after a recovery cut.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "storage/partition_log.hpp"
#include "storage/recovery_point.hpp"
#include "storage/txn_state.hpp"
#include "tests/storage/storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;
namespace fs = std::filesystem;

namespace {

/// Header of a transactional data batch of `pid` over [base, base + n).
batch_header_info txn_data(int64_t pid, int64_t base, int n = 1) {
  batch_header_info h;
  h.producer_id = pid;
  h.producer_epoch = 0;
  h.base_sequence = 0;
  h.attributes = attr_transactional;
  h.base = offset{base};
  h.last = offset{base + n - 1};
  return h;
}

/// Header of a marker of `pid` at `at`.
batch_header_info marker(int64_t pid, int64_t at, int16_t type, int16_t epoch = 0) {
  batch_header_info h;
  h.producer_id = pid;
  h.producer_epoch = epoch;
  h.attributes = attr_transactional | attr_control;
  h.control_type = type;
  h.base = offset{at};
  h.last = offset{at};
  return h;
}

/// A transactional batch of `n` records (pid, epoch, first sequence).
std::string txn_batch(int64_t pid, int16_t epoch, int32_t seq, int n, int seed) {
  batch_options o;
  o.producer_id = pid;
  o.producer_epoch = epoch;
  o.base_sequence = seq;
  o.attributes = attr_transactional;
  return encode_batch(make_records(n, seed), o).value();
}

result<offset> append(partition_log& lg, std::string batch) { return lg.append(batch); }

result<offset> append_marker(partition_log& lg, int64_t pid, int16_t epoch, int16_t type) {
  return append(lg, make_control_batch(pid, epoch, type, 3, 5000).value());
}

}  // namespace

TEST_CASE("txn state: a commit closes a transaction, an abort also indexes it", "[txn_state]") {
  txn_state t;
  t.record(txn_data(5, 0, 2));
  t.record(txn_data(5, 2, 2));  // the same transaction: first offset stays 0
  t.record(txn_data(6, 4, 1));
  CHECK(t.open() == std::map<int64_t, offset>{{5, offset{0}}, {6, offset{4}}});
  CHECK(t.last_stable_offset(offset{10}) == offset{0});
  t.record(marker(5, 5, control_commit));
  CHECK(t.open().size() == 1);
  CHECK(t.aborted().empty());
  CHECK(t.last_stable_offset(offset{10}) == offset{4});
  t.record(marker(6, 6, control_abort));
  CHECK(t.open().empty());
  CHECK(t.aborted() == std::vector<aborted_txn>{{6, offset{4}, offset{6}}});
  CHECK(t.last_stable_offset(offset{10}) == offset{10});
  CHECK(t.last_stable_offset(offset{3}) == offset{3});  // never above the high watermark
  // The next transaction of pid 6 starts at its next batch.
  t.record(txn_data(6, 7, 1));
  CHECK(t.open().at(6) == offset{7});
}

TEST_CASE("txn state: a marker with no open transaction records nothing", "[txn_state]") {
  txn_state t;
  t.record(marker(9, 0, control_abort));
  t.record(marker(9, 1, control_commit));
  CHECK(t.open().empty());
  CHECK(t.aborted().empty());
  // Non-transactional batches (plain or idempotent) open nothing.
  auto plain = txn_data(9, 2);
  plain.attributes = 0;
  t.record(plain);
  plain.producer_id = -1;
  t.record(plain);
  CHECK(t.open().empty());
  CHECK(t.last_stable_offset(offset{3}) == offset{3});
}

TEST_CASE("txn state: aborted_between lists the aborted ranges overlapping from..to", "[txn_state]") {
  txn_state t;
  // pid 1 aborted over [0, 4], pid 2 over [2, 8], pid 3 committed, pid 1 over [10, 12].
  t.record(txn_data(1, 0, 2));
  t.record(txn_data(2, 2, 2));
  t.record(marker(1, 4, control_abort));
  t.record(txn_data(3, 5, 2));
  t.record(marker(3, 7, control_commit));
  t.record(marker(2, 8, control_abort));
  t.record(txn_data(1, 10, 2));
  t.record(marker(1, 12, control_abort));
  using v = std::vector<aborted_range>;
  CHECK(t.aborted_between(offset{0}, offset{100}) == v{{1, offset{0}}, {2, offset{2}}, {1, offset{10}}});
  CHECK(t.aborted_between(offset{4}, offset{4}) == v{{1, offset{0}}, {2, offset{2}}});  // a marker's offset counts
  CHECK(t.aborted_between(offset{5}, offset{9}) == v{{2, offset{2}}});
  CHECK(t.aborted_between(offset{9}, offset{9}).empty());  // the gap between
  CHECK(t.aborted_between(offset{9}, offset{10}) == v{{1, offset{10}}});  // first offset reached
  CHECK(t.aborted_between(offset{13}, offset{20}).empty());
}

TEST_CASE("txn state: trim drops aborted transactions whose marker is below the log start", "[txn_state]") {
  txn_state t;
  t.record(txn_data(1, 0, 2));
  t.record(marker(1, 2, control_abort));
  t.record(txn_data(2, 3, 2));
  t.record(marker(2, 5, control_abort));
  t.trim(offset{2});
  CHECK(t.aborted().size() == 2);  // the marker at 2 is still readable
  t.trim(offset{3});
  CHECK(t.aborted() == std::vector<aborted_txn>{{2, offset{3}, offset{5}}});
  t.clear();
  CHECK(t.aborted().empty());
}

TEST_CASE("txn state: several producers interleaved", "[txn_state]") {
  txn_state t;
  t.record(txn_data(1, 0));
  t.record(txn_data(2, 1));
  t.record(txn_data(1, 2));
  t.record(txn_data(3, 3));
  t.record(marker(2, 4, control_abort));
  CHECK(t.last_stable_offset(offset{20}) == offset{0});
  t.record(marker(1, 5, control_commit));
  CHECK(t.last_stable_offset(offset{20}) == offset{3});
  t.record(txn_data(2, 6));  // pid 2's next transaction
  t.record(marker(3, 7, control_abort));
  CHECK(t.last_stable_offset(offset{20}) == offset{6});
  CHECK(t.aborted() == std::vector<aborted_txn>{{2, offset{1}, offset{4}}, {3, offset{3}, offset{7}}});
}

TEST_CASE("txn state: aborted_between lists by first offset, not marker order", "[txn_state]") {
  // kafkajs 2.2.4 looks only at the head of the list: P1's records at 10
  // must come before P2's at 11 although P2's abort was written first.
  txn_state t;
  t.record(txn_data(1, 10));
  t.record(txn_data(2, 11));
  t.record(marker(2, 12, control_abort));
  t.record(marker(1, 13, control_abort));
  CHECK(t.aborted_between(offset{0}, offset{20})
        == std::vector<aborted_range>{{1, offset{10}}, {2, offset{11}}});
  // Ranges ending before `from` are left out, without a scan over them.
  CHECK(t.aborted_between(offset{13}, offset{20}) == std::vector<aborted_range>{{1, offset{10}}});
  CHECK(t.aborted_between(offset{14}, offset{20}).empty());
}

TEST_CASE("committed filter: skips control batches and the batches of aborted transactions", "[txn_state]") {
  // pid 1: [0] aborted by the marker at 3; pid 2: [1] committed at 4;
  // pid 1 again: [5] open. A plain batch at 2.
  committed_filter f({{1, offset{0}}});
  auto plain = txn_data(7, 2);
  plain.attributes = 0;
  CHECK(f.skip(txn_data(1, 0)));
  CHECK_FALSE(f.skip(txn_data(2, 1)));
  CHECK_FALSE(f.skip(plain));
  CHECK(f.skip(marker(1, 3, control_abort)));
  CHECK(f.skip(marker(2, 4, control_commit)));
  CHECK_FALSE(f.skip(txn_data(1, 5)));  // after its abort marker: a new transaction
}

TEST_CASE("control batch: a transaction marker round trips and passes the validator", "[txn_state][record_batch]") {
  for (int16_t type : {control_abort, control_commit}) {
    auto bytes = make_control_batch(42, 7, type, 11, 123456).value();
    auto view = batch_view::parse(bytes, true);
    REQUIRE(view);
    CHECK(view->attributes() == 0x30);
    CHECK(view->is_control());
    CHECK(view->producer_id() == 42);
    CHECK(view->producer_epoch() == 7);
    CHECK(view->base_sequence() == -1);
    CHECK(view->count() == 1);
    CHECK(view->max_timestamp() == 123456);
    CHECK(control_type_of(*view).value() == type);
    CHECK(marker_coordinator_epoch(*view).value() == 11);
    auto head = peek_batch_header(bytes).value();
    CHECK(head.control_type == type);
    // The key is [version 0][type], the value [version 0][coordinator epoch].
    auto recs = decode_records(*view).value();
    REQUIRE(recs.size() == 1);
    CHECK(*recs[0].key == std::string({0, 0, 0, static_cast<char>(type)}));
    CHECK(*recs[0].value == std::string({0, 0, 0, 0, 0, 11}));
  }
  CHECK(make_control_batch(42, 7, 2, 0, 0).err().code == errc::invalid_argument);
  CHECK(make_control_batch(-1, 7, control_commit, 0, 0).err().code == errc::invalid_argument);
  auto data = encode_batch(make_records(1, 1)).value();
  CHECK(control_type_of(batch_view::parse(data).value()).err().code == errc::invalid_argument);
  CHECK(peek_batch_header(data).value().control_type == -1);
}

TEST_CASE("producer state: a marker sets the epoch and fences older batches and markers", "[txn_state][producer_state]") {
  temp_dir d;
  auto lg = partition_log::open(d.sub("p")).value();
  REQUIRE(append(lg, txn_batch(5, 0, 0, 2, 1)));
  // The coordinator aborts with a bumped epoch (a fenced producer).
  REQUIRE(append_marker(lg, 5, 1, control_abort).value() == offset{2});
  CHECK(lg.producers().epoch_of(5) == 1);
  auto stale = append(lg, txn_batch(5, 0, 2, 1, 2));
  REQUIRE_FALSE(stale);
  CHECK(stale.err().code == errc::invalid_producer_epoch);
  auto stale_marker = append_marker(lg, 5, 0, control_commit);
  REQUIRE_FALSE(stale_marker);
  CHECK(stale_marker.err().code == errc::invalid_producer_epoch);
  CHECK(lg.log_end() == offset{3});  // nothing appended
  // The new epoch starts at sequence 0; a marker of the same epoch is taken.
  REQUIRE(append(lg, txn_batch(5, 1, 0, 1, 3)).value() == offset{3});
  REQUIRE(append_marker(lg, 5, 1, control_commit).value() == offset{4});
  REQUIRE(append(lg, txn_batch(5, 1, 1, 1, 4)).value() == offset{5});  // sequences go on
}

TEST_CASE("partition log: the transaction state is rebuilt on reopen and after a recovery cut", "[txn_state]") {
  temp_dir d;
  const auto dir = d.sub("p");
  log_config cfg;
  cfg.segment_bytes = 300;  // a few batches per segment
  cfg.checkpoint_interval_ms = 24 * 3600 * 1000;
  {
    auto lg = partition_log::open(dir, cfg).value();
    REQUIRE(append(lg, txn_batch(1, 0, 0, 2, 1)).value() == offset{0});
    REQUIRE(append(lg, txn_batch(2, 0, 0, 2, 2)).value() == offset{2});
    REQUIRE(append_marker(lg, 1, 0, control_abort).value() == offset{4});
    REQUIRE(append(lg, encode_batch(make_records(3, 3)).value()).value() == offset{5});
    REQUIRE(append_marker(lg, 2, 0, control_abort).value() == offset{8});
    REQUIRE(lg.segment_count() > 1);
    REQUIRE(lg.flush());
    CHECK(lg.last_stable_offset() == offset{9});
    CHECK(lg.txn().aborted() == std::vector<aborted_txn>{{1, offset{0}, offset{4}}, {2, offset{2}, offset{8}}});
  }
  {
    auto lg = partition_log::open(dir, cfg).value();
    CHECK(lg.txn().open().empty());
    CHECK(lg.txn().aborted() == std::vector<aborted_txn>{{1, offset{0}, offset{4}}, {2, offset{2}, offset{8}}});
    CHECK(lg.last_stable_offset() == offset{9});
    CHECK(lg.producers().epoch_of(2) == 0);
  }
  // A torn last batch (the marker at 8): recovery cuts it, pid 2's
  // transaction is open again and holds the LSO at its first offset.
  std::string last;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".log" && e.path().string() > last)
      last = e.path().string();
  const auto size = fs::file_size(last);
  fs::resize_file(last, size - 3);
  REQUIRE(write_recovery_checkpoint(dir, {offset{8}, false}).ok());
  auto lg = partition_log::open(dir, cfg).value();
  REQUIRE(lg.log_end() == offset{8});
  CHECK(lg.txn().open() == std::map<int64_t, offset>{{2, offset{2}}});
  CHECK(lg.txn().aborted() == std::vector<aborted_txn>{{1, offset{0}, offset{4}}});
  CHECK(lg.last_stable_offset() == offset{2});
  REQUIRE(append_marker(lg, 2, 0, control_commit).value() == offset{8});
  CHECK(lg.last_stable_offset() == offset{9});
  CHECK(lg.txn().aborted().size() == 1);  // committed this time
}

TEST_CASE("partition log: reset forgets transactions, the log start trims the aborted index", "[txn_state]") {
  temp_dir d;
  auto lg = partition_log::open(d.sub("p")).value();
  REQUIRE(append(lg, txn_batch(1, 0, 0, 2, 1)));
  REQUIRE(append_marker(lg, 1, 0, control_abort).value() == offset{2});
  REQUIRE(append(lg, txn_batch(2, 0, 0, 2, 2)).value() == offset{3});
  REQUIRE(lg.advance_log_start(offset{3}).value() == offset{3});
  CHECK(lg.txn().aborted().empty());
  CHECK(lg.last_stable_offset() == offset{3});
  // Copied batches (a move) carry the state to the destination.
  auto dst = partition_log::create(d.sub("dst"), lg.log_start()).value();
  auto all = lg.read(lg.log_start(), 1 << 20).value();
  REQUIRE(dst.append_with_offsets(all.batches));
  CHECK(dst.txn().open() == std::map<int64_t, offset>{{2, offset{3}}});
  REQUIRE(lg.reset(offset{10}));
  CHECK(lg.txn().open().empty());
  CHECK(lg.last_stable_offset() == offset{10});
}

TEST_CASE("partition log: a producer with an open transaction is not expired", "[txn_state][producer_state]") {
  temp_dir d;
  auto lg = partition_log::open(d.sub("p")).value();
  REQUIRE(append(lg, txn_batch(1, 0, 0, 1, 1)));  // open, timestamps 1000
  REQUIRE(append(lg, txn_batch(2, 0, 0, 1, 2)));
  REQUIRE(append_marker(lg, 2, 0, control_commit));  // closed, marker timestamp 5000
  CHECK(lg.expire_producers(5000 + producer_expiration_ms + 1) == 1);
  CHECK(lg.producers().producer_count() == 1);
  CHECK(lg.producers().epoch_of(1) == 0);
  CHECK(lg.producers().epoch_of(2) == -1);
}

TEST_CASE("txn state: encode_to and decode_from round-trip the open transactions and the aborted index, and refuse a "
          "short input",
          "[txn_state]") {
  txn_state t;
  t.record(txn_data(5, 0, 2));
  t.record(txn_data(6, 2, 1));
  t.record(marker(6, 3, control_abort));
  t.record(txn_data(9, 4, 3));
  std::string bytes = "head";
  t.encode_to(bytes);
  bytes += "tail";
  std::string_view in = bytes;
  in.remove_prefix(4);
  txn_state back;
  REQUIRE(back.decode_from(in));
  CHECK(in == "tail");
  CHECK(back.open() == t.open());
  CHECK(back.aborted() == t.aborted());
  CHECK(back.last_stable_offset(offset{10}) == t.last_stable_offset(offset{10}));
  for (size_t cut = 0; cut + 4 < bytes.size() - 4; ++cut) {
    std::string_view part = std::string_view(bytes).substr(4, cut);
    txn_state partial;
    CHECK_FALSE(partial.decode_from(part));
  }
}
