// Idempotent-producer state kept with the partition log (KIP-98): resends
// get the first append's offset and append nothing, gaps and stale epochs
// are refused, and the state survives a reopen and a copy to another log.

#include <catch2/catch.hpp>

#include <limits>

#include "storage/partition_log.hpp"
#include "storage/producer_state.hpp"
#include "tests/storage/storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;

namespace {

/// A batch of `n` records from producer `pid` at `epoch`, first sequence `seq`.
std::string idem_batch(int64_t pid, int16_t epoch, int32_t seq, int n, int seed, int64_t ts = 1000) {
  batch_options o;
  o.producer_id = pid;
  o.producer_epoch = epoch;
  o.base_sequence = seq;
  return encode_batch(make_records(n, seed, 0, ts), o).value();
}

result<offset> append(partition_log& lg, std::string batch) { return lg.append(batch); }

errc append_error(partition_log& lg, std::string batch) {
  auto r = append(lg, std::move(batch));
  return r ? errc{} : r.err().code;
}

batch_header_info header(int64_t pid, int16_t epoch, int32_t seq, int n, int64_t base) {
  batch_header_info h;
  h.producer_id = pid;
  h.producer_epoch = epoch;
  h.base_sequence = seq;
  h.base = offset{base};
  h.last = offset{base + n - 1};
  h.max_timestamp = 1000;
  return h;
}

}  // namespace

TEST_CASE("producer state: a resend is a duplicate answered with the first append's offset", "[producer_state]") {
  temp_dir d;
  auto lg = partition_log::open(d.sub("p")).value();
  auto b = idem_batch(7, 0, 0, 10, 1);
  REQUIRE(lg.append(b).value() == offset{0});
  auto b2 = idem_batch(7, 0, 10, 5, 2);
  REQUIRE(lg.append(b2).value() == offset{10});
  for (auto [seq, n, want] : {std::tuple{0, 10, 0}, std::tuple{10, 5, 10}}) {
    auto again = idem_batch(7, 0, seq, n, 9);
    auto r = lg.append(again);
    REQUIRE_FALSE(r);
    CHECK(r.err().code == errc::duplicate_sequence);
    CHECK(r.err().original == offset{want});
  }
  CHECK(lg.log_end() == offset{15});  // nothing appended by the resends
  CHECK(read_all(lg).size() == 15);
}

TEST_CASE("producer state: a gap, an older epoch and a new epoch not at 0 are refused", "[producer_state]") {
  temp_dir d;
  auto lg = partition_log::open(d.sub("p")).value();
  REQUIRE(append(lg, idem_batch(7, 3, 0, 4, 1)));
  CHECK(append_error(lg, idem_batch(7, 3, 5, 1, 2)) == errc::out_of_order_sequence);  // 4 expected
  CHECK(append_error(lg, idem_batch(7, 2, 4, 1, 2)) == errc::invalid_producer_epoch);
  CHECK(append_error(lg, idem_batch(7, 4, 9, 1, 2)) == errc::out_of_order_sequence);
  CHECK(lg.log_end() == offset{4});
  // In order, a new producer at any sequence, a bumped epoch from 0, and
  // batches without a producer id are all appended.
  CHECK(append_error(lg, idem_batch(7, 3, 4, 2, 3)) == errc{});
  CHECK(append_error(lg, idem_batch(8, 0, 500, 1, 4)) == errc{});
  CHECK(append_error(lg, idem_batch(7, 4, 0, 1, 5)) == errc{});
  CHECK(append_error(lg, make_batch(3, 6)) == errc{});
  CHECK(append_error(lg, make_batch(3, 6)) == errc{});
  CHECK(lg.log_end() == offset{14});
  CHECK(lg.producers().producer_count() == 2);
}

TEST_CASE("producer state: sequences wrap past INT32_MAX to 0", "[producer_state]") {
  producer_state s;
  const int32_t max = std::numeric_limits<int32_t>::max();
  s.record(header(1, 0, max - 1, 2, 0));  // max-1, max
  CHECK(s.check(header(1, 0, 0, 1, 2)).kind == producer_verdict::accept);
  CHECK(s.check(header(1, 0, max, 1, 2)).kind == producer_verdict::out_of_order);
  s.record(header(1, 0, max, 3, 2));  // max, 0, 1
  CHECK(s.check(header(1, 0, 2, 1, 5)).kind == producer_verdict::accept);
  auto dup = s.check(header(1, 0, max, 3, 9));
  CHECK(dup.kind == producer_verdict::duplicate);
  CHECK(dup.original == offset{2});
}

TEST_CASE("producer state: only the last five batches are remembered", "[producer_state]") {
  producer_state s;
  for (int i = 0; i < 7; ++i)
    s.record(header(1, 0, i, 1, i));
  CHECK(s.check(header(1, 0, 2, 1, 99)).kind == producer_verdict::duplicate);
  CHECK(s.check(header(1, 0, 1, 1, 99)).kind == producer_verdict::out_of_order);  // forgotten
}

TEST_CASE("producer state: producers silent past the expiration are forgotten", "[producer_state]") {
  producer_state s;
  auto old = header(1, 0, 0, 1, 0);
  old.max_timestamp = 1'000;
  auto fresh = header(2, 0, 0, 1, 1);
  fresh.max_timestamp = 1'000 + producer_expiration_ms;
  s.record(old);
  s.record(fresh);
  CHECK(s.expire(2'000 + producer_expiration_ms) == 1);
  CHECK(s.producer_count() == 1);
  CHECK(s.check(header(1, 0, 9, 1, 5)).kind == producer_verdict::accept);  // unknown again
}

TEST_CASE("producer state: rebuilt from the log on reopen, across segments", "[producer_state]") {
  temp_dir d;
  log_config cfg;
  cfg.segment_bytes = 400;  // a few batches per segment
  {
    auto lg = partition_log::open(d.sub("p"), cfg).value();
    for (int i = 0; i < 12; ++i) {
      auto b = idem_batch(7, 1, i * 2, 2, i);
      REQUIRE(lg.append(b));
    }
    REQUIRE(lg.segment_count() > 2);
    REQUIRE(lg.flush());
  }
  auto lg = partition_log::open(d.sub("p"), cfg).value();
  CHECK(lg.producers().producer_count() == 1);
  auto r = append(lg, idem_batch(7, 1, 22, 2, 1));  // the last batch again
  REQUIRE_FALSE(r);
  CHECK(r.err().code == errc::duplicate_sequence);
  CHECK(r.err().original == offset{22});
  CHECK(append_error(lg, idem_batch(7, 1, 30, 1, 1)) == errc::out_of_order_sequence);
  CHECK(append_error(lg, idem_batch(7, 1, 24, 1, 1)) == errc{});
}

TEST_CASE("producer state: a copy with offsets carries the state to the destination log", "[producer_state]") {
  temp_dir d;
  auto src = partition_log::open(d.sub("src")).value();
  for (int i = 0; i < 4; ++i) {
    auto b = idem_batch(7, 0, i * 3, 3, i);
    REQUIRE(src.append(b));
  }
  auto dst = partition_log::create(d.sub("dst"), src.log_start()).value();
  auto all = src.read(src.log_start(), 1 << 20).value();
  std::string_view rest = all.batches;
  while (!rest.empty()) {
    auto n = peek_batch_size(rest).value();
    REQUIRE(dst.append_with_offsets(rest.substr(0, n)));
    rest.remove_prefix(n);
  }
  auto r = append(dst, idem_batch(7, 0, 9, 3, 0));  // a resend after the move
  REQUIRE_FALSE(r);
  CHECK(r.err().original == offset{9});
  CHECK(append_error(dst, idem_batch(7, 0, 12, 1, 0)) == errc{});
  // reset forgets every producer.
  REQUIRE(dst.reset(offset{100}));
  CHECK(dst.producers().producer_count() == 0);
}

TEST_CASE("producer state: encode_to and decode_from round-trip every producer's epoch and last batches, and refuse "
          "a short input",
          "[producer_state]") {
  producer_state s;
  int64_t base = 0;
  for (int32_t seq = 0; seq < 14; seq += 2, base += 2)
    s.record(header(7, 0, seq, 2, base));
  s.record(header(8, 3, 0, 1, base++));
  std::string bytes;
  s.encode_to(bytes);
  std::string_view in = bytes;
  producer_state back;
  REQUIRE(back.decode_from(in));
  CHECK(in.empty());
  CHECK(back.producer_count() == 2);
  CHECK(back.epoch_of(8) == 3);
  // The same verdicts: a resend of each of the last five batches is a
  // duplicate at its offset, the sixth-newest is out of order, the next
  // sequence is accepted.
  for (int32_t seq = 0; seq < 14; seq += 2) {
    auto h = header(7, 0, seq, 2, 100);
    CHECK(back.check(h).kind == s.check(h).kind);
    CHECK(back.check(h).original == s.check(h).original);
  }
  CHECK(back.check(header(7, 0, 14, 2, 100)).kind == s.check(header(7, 0, 14, 2, 100)).kind);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::string_view part = std::string_view(bytes).substr(0, cut);
    producer_state partial;
    CHECK_FALSE(partial.decode_from(part));
  }
}
