// Transactions on a partition actor (docs/transactions.md): markers written
// durably, reads with an isolation level, the last stable offset.
#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "actors/partition.hpp"
#include "actors/system.hpp"
#include "storage/record_batch.hpp"
#include "tests/support/process.hpp"

using namespace moonmq;
using namespace std::chrono_literals;

namespace {

/// A transactional batch of `n` records of producer `pid` (epoch 0) from
/// sequence `seq`.
std::string txn_batch(int64_t pid, int32_t seq, int n) {
  std::vector<storage::record> recs;
  for (int i = 0; i < n; ++i)
    recs.push_back({std::string("k"), "v" + std::to_string(seq + i), {}, 1000 + i});
  storage::batch_options o;
  o.producer_id = pid;
  o.producer_epoch = 0;
  o.base_sequence = seq;
  o.attributes = storage::attr_transactional;
  return storage::encode_batch(recs, o).value();
}

struct isolated_read {
  std::string batches;
  int64_t log_start = -1, high_watermark = -1, lso = -1;
  std::vector<int64_t> aborted;
  /// Base offsets of the batches returned.
  std::vector<int64_t> bases() const {
    std::vector<int64_t> out;
    std::string_view rest = batches;
    while (!rest.empty()) {
      auto h = storage::peek_batch_header(rest).value();
      out.push_back(h.base.value);
      rest.remove_prefix(h.size);
    }
    return out;
  }
};

struct txn_fixture {
  txn_fixture() : cfg(make_system_config({})), sys(*cfg), self(sys) {}
  ~txn_fixture() {
    if (part)
      caf::anon_send_exit(part, caf::exit_reason::user_shutdown);
  }
  void start() { part = spawn_partition(sys, io, partition_settings{dir.path(), "t", 0, {}, 0}); }
  void restart() {
    self->send_exit(part, caf::exit_reason::user_shutdown);
    self->wait_for(part);
    start();
  }
  /// The offset an append or marker request replies, or its error code.
  template <class... Ts>
  std::pair<int64_t, std::string> ask(Ts... xs) {
    std::pair<int64_t, std::string> out{-1, ""};
    self->request(part, 10s, xs...).receive([&](int64_t v) { out.first = v; },
                                            [&](caf::error& e) { out.second = error_code_of(e); });
    return out;
  }
  int64_t marker(int64_t pid, int16_t epoch, bool commit) {
    auto [at, err] = ask(marker_atom::value, pid, epoch, commit, int32_t{0});
    REQUIRE(err.empty());
    return at;
  }
  isolated_read read(int64_t from, bool committed) {
    isolated_read out;
    self->request(part, 10s, read_atom::value, from, int32_t{1 << 20}, true, committed)
      .receive(
        [&](std::string& b, int64_t lo, int64_t hw, int64_t lso, std::vector<int64_t>& aborted) {
          out = {std::move(b), lo, hw, lso, std::move(aborted)};
        },
        [&](caf::error& e) { FAIL("read failed: " << caf::to_string(e)); });
    return out;
  }

  test::temp_dir dir;
  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  std::shared_ptr<io_pool> io = spawn_io_pool(sys, io_settings{});
  partition_actor part;
};

}  // namespace

TEST_CASE("a transaction marker is written durably, replies its offset and survives a restart",
          "[partition][txn]") {
  txn_fixture f;
  f.start();
  CHECK(f.ask(append_atom::value, txn_batch(7, 0, 3), true).first == 0);
  CHECK(f.marker(7, 0, false) == 3);
  nlohmann::json s;
  f.self->request(f.part, 10s, status_atom::value)
    .receive([&](std::string& text) { s = nlohmann::json::parse(text); }, [&](caf::error&) {});
  CHECK(s["pending_acks"] == 0);
  CHECK(s["durable_offset"] == 4);
  f.restart();
  auto r = f.read(0, true);
  CHECK(r.high_watermark == 4);
  CHECK(r.lso == 4);
  CHECK(r.bases() == std::vector<int64_t>{0, 3});
  CHECK(r.aborted == std::vector<int64_t>{7, 0});  // the aborted index came back with the log
}

TEST_CASE("read_committed stops at the last stable offset and reports the aborted ranges", "[partition][txn]") {
  txn_fixture f;
  f.start();
  CHECK(f.ask(append_atom::value, txn_batch(1, 0, 2), true).first == 0);  // pid 1: 0..1, aborted at 4
  CHECK(f.ask(append_atom::value, txn_batch(2, 0, 2), true).first == 2);  // pid 2: 2..3, still open
  CHECK(f.marker(1, 0, false) == 4);
  CHECK(f.ask(append_atom::value, txn_batch(1, 2, 1), true).first == 5);  // pid 1 again: open
  auto committed = f.read(0, true);
  CHECK(committed.high_watermark == 6);
  CHECK(committed.lso == 2);  // pid 2's first offset
  CHECK(committed.bases() == std::vector<int64_t>{0});
  CHECK(committed.aborted == std::vector<int64_t>{1, 0});
  CHECK(f.read(2, true).bases().empty());  // at the LSO: nothing yet
  CHECK(f.read(5, true).bases().empty());  // above it, below the high watermark
  auto uncommitted = f.read(0, false);  // everything, the real LSO, no aborted list
  CHECK(uncommitted.bases() == std::vector<int64_t>{0, 2, 4, 5});
  CHECK(uncommitted.lso == 2);
  CHECK(uncommitted.aborted.empty());
  // pid 2 commits: the LSO moves to pid 1's open transaction at 5.
  CHECK(f.marker(2, 0, true) == 6);
  committed = f.read(0, true);
  CHECK(committed.lso == 5);
  CHECK(committed.bases() == std::vector<int64_t>{0, 2, 4});
  CHECK(committed.aborted == std::vector<int64_t>{1, 0});
  CHECK(f.read(4, true).aborted == std::vector<int64_t>{1, 0});  // the marker's own offset overlaps
  int64_t lo = -1, hw = -1, lso = -1;
  f.self->request(f.part, 10s, lso_atom::value)
    .receive([&](int64_t a, int64_t b, int64_t c) { std::tie(lo, hw, lso) = std::tie(a, b, c); },
             [&](caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(std::tie(lo, hw, lso) == std::make_tuple(int64_t{0}, int64_t{7}, int64_t{5}));
}

TEST_CASE("a marker of a stale epoch is refused, a sealed partition refuses markers", "[partition][txn]") {
  txn_fixture f;
  f.start();
  CHECK(f.ask(append_atom::value, txn_batch(3, 0, 1), true).first == 0);
  CHECK(f.marker(3, 2, false) == 1);  // a bumped epoch fences epoch 0
  auto stale = f.ask(marker_atom::value, int64_t{3}, int16_t{1}, true, int32_t{0});
  CHECK(stale.second == "invalid_producer_epoch");
  CHECK(http_status_of(make_error(errc::invalid_producer_epoch)) == 409);
  CHECK(f.ask(append_atom::value, txn_batch(3, 1, 1), true).second == "invalid_producer_epoch");
  CHECK(f.ask(marker_atom::value, int64_t{-1}, int16_t{0}, true, int32_t{0}).second == "invalid_request");
  CHECK(f.ask(seal_atom::value, true).first == 2);
  CHECK(f.ask(marker_atom::value, int64_t{3}, int16_t{2}, true, int32_t{0}).second == "partition_moved");
}

TEST_CASE("read_committed never returns a batch that straddles a log start moved inside an open transaction",
          "[partition][txn]") {
  // DeleteRecords may move the log start inside a batch; the LSO is then
  // clamped to the log start, inside the open transaction's batch, and that
  // batch holds records of the open transaction on both sides of it.
  txn_fixture f;
  f.start();
  CHECK(f.ask(append_atom::value, txn_batch(3, 0, 10), true).first == 0);  // 0..9, open
  auto [start, err] = f.ask(delete_records_atom::value, int64_t{5}, false);
  REQUIRE(err.empty());
  CHECK(start == 5);
  auto r = f.read(5, true);
  CHECK(r.lso == 5);
  CHECK(r.bases().empty());
  CHECK(f.read(5, false).bases() == std::vector<int64_t>{0});  // read_uncommitted still gets it
  CHECK(f.marker(3, 0, true) == 10);  // committed: now it is served
  CHECK(f.read(5, true).bases() == std::vector<int64_t>{0, 10});
}

TEST_CASE("a read_committed time lookup finds nothing at or past the last stable offset", "[partition][txn]") {
  txn_fixture f;
  f.start();
  CHECK(f.ask(append_atom::value, txn_batch(1, 0, 2), true).first == 0);  // timestamps 1000, 1001; open
  auto lookup = [&](int64_t ts, bool committed) {
    std::pair<int64_t, int64_t> out{-2, -2};
    f.self->request(f.part, 10s, time_lookup_atom::value, ts, committed)
      .receive([&](int64_t offset, int64_t timestamp) { out = {offset, timestamp}; },
               [&](caf::error& e) { FAIL(caf::to_string(e)); });
    return out;
  };
  using found = std::pair<int64_t, int64_t>;
  CHECK(lookup(1001, false) == found{1, 1001});
  CHECK(lookup(1001, true) == found{-1, -1});  // offset 1 is past the LSO (0)
  CHECK(f.marker(1, 0, true) == 2);
  CHECK(lookup(1001, true) == found{1, 1001});
}
