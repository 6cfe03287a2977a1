// Shared storage's one-writer-per-epoch layout (storage/epoch_chain.hpp,
// docs/shared-storage.md "One writer per epoch"): a takeover reads the
// earlier epoch read-only and continues at the end of its valid data, a
// stopped owner's later appends are never read, damage stops a takeover,
// and an epoch a later one took over cannot write again.

#include "storage/epoch_chain.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "storage/chain_summary.hpp"
#include "storage/recovery_point.hpp"
#include "storage_test_helpers.hpp"
#include "util/atomic_file.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;
namespace fs = std::filesystem;

namespace {

using records_t = std::vector<std::pair<int64_t, std::string>>;

/// Appends `batches` batches of 3 records (values from `seed`) and returns
/// what was appended, offset by offset.
records_t fill(partition_log& lg, int batches, int seed) {
  records_t out;
  for (int b = 0; b < batches; ++b) {
    auto recs = make_records(3, seed + b, 40);
    auto batch = encode_batch(recs).value();
    auto base = lg.append(batch);
    REQUIRE(base.ok());
    for (int i = 0; i < 3; ++i)
      out.emplace_back(base->value + i, recs[static_cast<size_t>(i)].value);
  }
  return out;
}

records_t operator+(records_t a, const records_t& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Every file under `dir` with its size: what "never written" is checked against.
std::map<std::string, uintmax_t> files_of(const std::string& dir) {
  std::map<std::string, uintmax_t> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      out[e.path().filename().string()] = e.file_size();
  return out;
}

/// An idempotent batch of 2 records of producer 7, epoch 0, from `seq`,
/// with values of `value_bytes` (from `seed`).
std::string idempotent_batch(int32_t seq, int seed, size_t value_bytes) {
  batch_options o;
  o.producer_id = 7;
  o.producer_epoch = 0;
  o.base_sequence = seq;
  return encode_batch(make_records(2, seed, value_bytes), o).value();
}

log_config small() {
  auto c = one_kib_segments();
  c.checkpoint_interval_ms = 0;
  return c;
}

}  // namespace

TEST_CASE("shared storage: a takeover record round-trips and a damaged one stops the chain",
          "[storage][shared]") {
  takeover_record r{42, offset{1234}};
  auto line = encode_takeover_record(r);
  auto back = decode_takeover_record(line);
  REQUIRE(back);
  CHECK(back->epoch == 42);
  CHECK(back->start == offset{1234});
  auto bad = line;
  bad[bad.find("1234")] = '9';
  CHECK_FALSE(decode_takeover_record(bad));
  CHECK_FALSE(decode_takeover_record("moonmq-takeover v1 epoch=0 start_offset=0"));

  temp_dir tmp;
  auto root = tmp.sub("t-0");
  REQUIRE(write_takeover_record(root, {3, offset{10}}).ok());
  auto read = read_takeover_records(root);
  REQUIRE(read.ok());
  REQUIRE(read->size() == 1);
  CHECK(read->front().start == offset{10});
  {
    std::ofstream f(takeover_record_path(root, 3), std::ios::trunc);
    f << "moonmq-takeover v1 epoch=3 start_offset=11 crc32c=00000000\n";
  }
  auto damaged = read_takeover_records(root);
  REQUIRE_FALSE(damaged.ok());
  CHECK(damaged.err().code == errc::corrupt_log);
  auto opened = open_epoch(root, 4, small());
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.err().code == errc::corrupt_log);
  CHECK_FALSE(fs::exists(epoch_log_dir(root, 4)));
}

TEST_CASE("shared storage: the first epoch writes nothing until its first record, then its takeover record first",
          "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  epoch_open_info info;
  auto lg = open_epoch(root, 1, small(), &info);
  REQUIRE(lg.ok());
  CHECK(info.took_over);
  CHECK(info.start == offset{0});
  CHECK_FALSE(fs::exists(root));
  auto written = fill(*lg, 2, 1);
  REQUIRE(lg->flush().ok());
  auto records = read_takeover_records(root);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 1);
  CHECK(records->front().epoch == 1);
  CHECK(records->front().start == offset{0});
  CHECK(read_all(*lg) == written);

  // Its owner restarts: the epoch is reopened, not taken over again.
  REQUIRE(lg->close().ok());
  epoch_open_info again;
  auto reopened = open_epoch(root, 1, small(), &again);
  REQUIRE(reopened.ok());
  CHECK_FALSE(again.took_over);
  CHECK(read_all(*reopened) == written);
}

TEST_CASE("shared storage: a takeover continues at the end of the earlier epoch's data and never writes its files",
          "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto first = open_epoch(root, 1, small());
  REQUIRE(first.ok());
  auto written = fill(*first, 20, 1);  // several 1 KiB segments
  REQUIRE(first->flush().ok());
  REQUIRE(first->segment_count() > 3);
  const auto before = files_of(epoch_log_dir(root, 1));

  epoch_open_info info;
  auto second = open_epoch(root, 2, small(), &info);
  REQUIRE(second.ok());
  CHECK(info.took_over);
  CHECK(info.previous_epoch == 1);
  CHECK(info.start == first->log_end());
  CHECK(info.prior_segments == first->segment_count());
  CHECK(second->chained());
  CHECK(second->log_start() == offset{0});
  CHECK(second->log_end() == first->log_end());
  CHECK(read_all(*second) == written);
  CHECK(read_all(*second, 100) == written);  // one batch per read, through the in-memory indexes

  auto more = fill(*second, 5, 100);
  CHECK(more.front().first == info.start.value);
  REQUIRE(second->flush().ok());
  CHECK(read_all(*second) == written + more);
  CHECK(files_of(epoch_log_dir(root, 1)) == before);
  CHECK_FALSE(second->reset(offset{0}).ok());  // a chained log never rewrites its epochs
  CHECK(files_of(epoch_log_dir(root, 1)) == before);

  // The time lookup reaches into the earlier epoch.
  auto hit = second->offset_for_timestamp(0);
  REQUIRE(hit.ok());
  REQUIRE(*hit);
  CHECK((*hit)->off == offset{0});
}

TEST_CASE("shared storage: a stopped owner that wakes up and keeps appending is never read",
          "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto zombie = open_epoch(root, 1, small());
  REQUIRE(zombie.ok());
  auto acknowledged = fill(*zombie, 6, 1);
  REQUIRE(zombie->flush().ok());

  epoch_open_info info;
  auto owner = open_epoch(root, 2, small(), &info);
  REQUIRE(owner.ok());
  const auto t = info.start;
  CHECK(t == offset{18});

  // The old owner appends on (rolling into new segments of its own), and
  // the new one appends at T: the offsets overlap, the directories do not.
  auto lost = fill(*zombie, 12, 500);
  REQUIRE(zombie->flush().ok());
  CHECK(lost.front().first == t.value);
  auto taken = fill(*owner, 4, 900);
  REQUIRE(owner->flush().ok());
  CHECK(taken.front().first == t.value);
  CHECK(read_all(*owner) == acknowledged + taken);

  // Its restart and the next takeover read the same chain.
  REQUIRE(owner->close().ok());
  auto reopened = open_epoch(root, 2, small());
  REQUIRE(reopened.ok());
  CHECK(read_all(*reopened) == acknowledged + taken);
  epoch_open_info next;
  auto third = open_epoch(root, 3, small(), &next);
  REQUIRE(third.ok());
  CHECK(next.previous_epoch == 2);
  CHECK(next.start == offset{t.value + 12});
  CHECK(read_all(*third) == acknowledged + taken);

  // The epochs it ended cannot be opened for writing again.
  for (uint64_t old : {1, 2}) {
    auto again = open_epoch(root, old, small());
    REQUIRE_FALSE(again.ok());
    CHECK(again.err().code == errc::epoch_over);
  }
}

TEST_CASE("shared storage: a torn tail of the earlier epoch ends it and stays on disk", "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto first = open_epoch(root, 1, small());
  REQUIRE(first.ok());
  auto written = fill(*first, 2, 1);
  REQUIRE(first->flush().ok());
  REQUIRE(first->checkpoint().ok());
  // Half of a batch past the recovery point: a write that never completed.
  auto torn = make_batch(3, 77, 40);
  std::string path;
  for (const auto& e : fs::directory_iterator(epoch_log_dir(root, 1)))
    if (e.path().extension() == ".log")
      path = std::max(path, e.path().string());
  {
    std::ofstream f(path, std::ios::app | std::ios::binary);
    f.write(torn.data(), static_cast<std::streamsize>(torn.size() / 2));
  }
  const auto size = fs::file_size(path);

  epoch_open_info info;
  auto second = open_epoch(root, 2, small(), &info);
  REQUIRE(second.ok());
  CHECK(info.start == offset{6});
  CHECK(info.cut_bytes == torn.size() / 2);
  CHECK(fs::file_size(path) == size);
  CHECK(read_all(*second) == written);
}

TEST_CASE("shared storage: damage below the earlier epoch's recovery point refuses the takeover and writes nothing",
          "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto first = open_epoch(root, 1, log_config{});
  REQUIRE(first.ok());
  fill(*first, 10, 1);
  REQUIRE(first->close().ok());  // recovery point = log end, clean
  std::string path = epoch_log_dir(root, 1) + "/" + segment_log_name(offset{0});
  const auto size = fs::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('\x5a');
    f.put('\xa5');
  }
  auto second = open_epoch(root, 2, log_config{});
  REQUIRE_FALSE(second.ok());
  CHECK(second.err().code == errc::corrupt_log);
  REQUIRE(second.err().damaged);
  CHECK(second.err().damaged->path == path);
  CHECK(second.err().damaged->first.value > 0);
  CHECK(second.err().damaged->end == offset{30});
  CHECK_FALSE(fs::exists(takeover_record_path(root, 2)));
  CHECK_FALSE(fs::exists(epoch_log_dir(root, 2)));
  CHECK(fs::file_size(path) == size);
}

TEST_CASE("shared storage: an epoch taken over before its first write never writes", "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  // Epoch 1 opened (in memory), its owner stopped before any write; epoch
  // 2 takes over at 0 and writes; then the old owner wakes up.
  auto stale = open_epoch(root, 1, small());
  REQUIRE(stale.ok());
  auto owner = open_epoch(root, 2, small());
  REQUIRE(owner.ok());
  auto written = fill(*owner, 2, 1);
  REQUIRE(owner->flush().ok());
  auto batch = make_batch(3, 5, 40);
  auto refused = stale->append(batch);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.err().code == errc::epoch_over);
  CHECK_FALSE(fs::exists(epoch_log_dir(root, 1)));

  // The other order: the old owner writes first (a record and bytes of its
  // own, never acknowledged), then the new epoch's first write. Readers
  // cut epoch 1 where epoch 2 starts: at 0.
  temp_dir tmp2;
  auto root2 = tmp2.sub("t-0");
  auto old_owner = open_epoch(root2, 1, small());
  auto new_owner = open_epoch(root2, 2, small());
  REQUIRE(old_owner.ok());
  REQUIRE(new_owner.ok());
  fill(*old_owner, 3, 50);
  REQUIRE(old_owner->flush().ok());
  auto kept = fill(*new_owner, 2, 1);
  REQUIRE(new_owner->flush().ok());
  CHECK(kept.front().first == 0);
  auto third = open_epoch(root2, 3, small());
  REQUIRE(third.ok());
  CHECK(read_all(*third) == kept);
}

TEST_CASE("shared storage: idempotent producers continue across a takeover", "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto idem = [](int32_t seq, int seed) { return idempotent_batch(seq, seed, 0); };
  auto first = open_epoch(root, 1, small());
  REQUIRE(first.ok());
  for (int32_t seq = 0; seq < 10; seq += 2) {
    auto b = idem(seq, seq);
    REQUIRE(first->append(b).ok());
  }
  REQUIRE(first->flush().ok());
  auto second = open_epoch(root, 2, small());
  REQUIRE(second.ok());
  auto resend = idem(8, 8);
  auto dup = second->append(resend);
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.err().code == errc::duplicate_sequence);
  CHECK(dup.err().original == offset{8});
  auto next = idem(10, 10);
  auto appended = second->append(next);
  REQUIRE(appended.ok());
  CHECK(*appended == offset{10});
  auto gap = idem(14, 14);
  CHECK(second->append(gap).err().code == errc::out_of_order_sequence);
}

TEST_CASE("shared storage: retention deletes the earlier epochs' segments first", "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto first = open_epoch(root, 1, small());
  REQUIRE(first.ok());
  auto old_records = fill(*first, 12, 1);
  REQUIRE(first->flush().ok());
  auto second = open_epoch(root, 2, small());
  REQUIRE(second.ok());
  auto new_records = fill(*second, 12, 100);
  REQUIRE(second->flush().ok());
  const auto old_segments = files_of(epoch_log_dir(root, 1)).size();
  auto removed = second->apply_retention(static_cast<int64_t>(second->size_bytes() / 2), -1, 0);
  REQUIRE(removed.ok());
  CHECK(removed->segments_deleted > 0);
  CHECK(files_of(epoch_log_dir(root, 1)).size() < old_segments);
  CHECK(second->log_start() > offset{0});
  auto kept = read_all(*second);
  REQUIRE_FALSE(kept.empty());
  CHECK(kept.back() == new_records.back());
  CHECK(kept.front().first == second->log_start().value);

  // A restart finds the same log start and records.
  REQUIRE(second->close().ok());
  auto reopened = open_epoch(root, 2, small());
  REQUIRE(reopened.ok());
  CHECK(reopened->log_start() == second->log_start());
  CHECK(read_all(*reopened) == kept);
}

TEST_CASE("shared storage: a takeover reads the chain summary instead of the earlier epochs' headers, and reads the "
          "same as a walk",
          "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto idem = [](int32_t seq, int seed) { return idempotent_batch(seq, seed, 40); };
  auto first = open_epoch(root, 1, small());
  REQUIRE(first.ok());
  auto written = fill(*first, 20, 1);  // several 1 KiB segments
  for (int32_t seq = 0; seq < 10; seq += 2) {
    auto b = idem(seq, seq);
    auto at = first->append(b);
    REQUIRE(at.ok());
  }
  REQUIRE(first->flush().ok());
  const auto first_end = first->log_end();

  // Epoch 2's takeover walks epoch 1 and leaves the summary of what it read.
  auto second = open_epoch(root, 2, small());
  REQUIRE(second.ok());
  std::string bytes;
  REQUIRE_FALSE(moonmq::util::read_file(chain_summary_path(root, 2), bytes));
  auto summary = decode_chain_summary(root, 2, bytes);
  REQUIRE(summary);
  CHECK(summary->end == first_end);
  CHECK(summary->segments.size() == second->segment_count() - 1);
  CHECK(summary->producers.producer_count() == 1);
  auto more = fill(*second, 4, 100);
  REQUIRE(second->flush().ok());
  const auto all = read_all(*second);

  // Damage to the second batch header of epoch 1's first sealed segment
  // (its base offset): a walk of the headers stops there, the summary does
  // not read them.
  const auto seg0 = epoch_log_dir(root, 1) + "/" + segment_log_name(offset{0});
  {
    std::fstream f(seg0, std::ios::in | std::ios::out | std::ios::binary);
    unsigned char len[4] = {};
    f.seekg(8);
    f.read(reinterpret_cast<char*>(len), 4);
    const auto first_batch = 12 + ((uint32_t{len[0]} << 24) | (uint32_t{len[1]} << 16) | (uint32_t{len[2]} << 8) | len[3]);
    f.seekp(static_cast<std::streamoff>(first_batch));
    const char junk[8] = {0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
    f.write(junk, sizeof junk);
  }
  epoch_open_info info;
  auto third = open_epoch(root, 3, small(), &info);
  REQUIRE(third.ok());
  CHECK(info.start == second->log_end());
  CHECK(info.prior_segments == second->segment_count());
  CHECK(third->log_end() == second->log_end());
  // The producer state came from the summary: a resend of epoch 1's last
  // idempotent batch is a duplicate at its offset, the next one follows.
  auto resend = idem(8, 8);
  auto dup = third->append(resend);
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.err().code == errc::duplicate_sequence);
  CHECK(dup.err().original == offset{first_end.value - 2});
  CHECK(fs::exists(chain_summary_path(root, 3)));
  CHECK_FALSE(fs::exists(chain_summary_path(root, 2)));  // superseded
  REQUIRE(third->close().ok());

  // Without the summary the takeover walks epoch 1 again and meets the damage.
  fs::remove_all(root + "/chains");
  auto walked = open_epoch(root, 4, small());
  REQUIRE_FALSE(walked.ok());
  CHECK(walked.err().code == errc::corrupt_log);
}

TEST_CASE("shared storage: a chain summary that does not match is ignored and the takeover walks the headers",
          "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto first = open_epoch(root, 1, small());
  REQUIRE(first.ok());
  auto written = fill(*first, 20, 1);
  REQUIRE(first->flush().ok());
  auto second = open_epoch(root, 2, small());
  REQUIRE(second.ok());
  auto more = fill(*second, 6, 100);
  REQUIRE(second->flush().ok());
  const auto path = chain_summary_path(root, 2);
  std::string good;
  REQUIRE_FALSE(moonmq::util::read_file(path, good));
  const auto expected = read_all(*second);
  bool trimmed = false;

  SECTION("a flipped byte fails its CRC") {
    auto bad = good;
    bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x5a);
    CHECK_FALSE(decode_chain_summary(root, 2, bad));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
  }
  SECTION("a torn one does not decode") {
    CHECK_FALSE(decode_chain_summary(root, 2, good.substr(0, good.size() - 7)));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << good.substr(0, good.size() - 7);
  }
  SECTION("another epoch's is not taken for this one") {
    CHECK_FALSE(decode_chain_summary(root, 3, good));
    fs::rename(path, chain_summary_path(root, 1));
  }
  SECTION("one that lists a segment retention removed since") {
    fs::remove(epoch_log_dir(root, 1) + "/" + segment_log_name(offset{0}));
    CHECK(read_chain_summary(root, {{1, offset{0}}, {2, first->log_end()}}) == std::nullopt);
    trimmed = true;
  }
  auto third = open_epoch(root, 3, small());
  REQUIRE(third.ok());
  CHECK(third->log_end() == second->log_end());
  auto got = read_all(*third);
  if (!trimmed) {
    CHECK(got == expected);
  } else {  // the walk starts at the first segment left
    CHECK(third->log_start() > offset{0});
    REQUIRE_FALSE(got.empty());
    CHECK(std::equal(got.begin(), got.end(), expected.end() - static_cast<std::ptrdiff_t>(got.size())));
  }
}

TEST_CASE("shared storage: an owner that wrote nothing at its epoch goes on at a later one without reading the chain",
          "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto first = open_epoch(root, 1, small());
  REQUIRE(first.ok());
  auto written = fill(*first, 20, 1);
  REQUIRE(first->flush().ok());
  auto second = open_epoch(root, 2, small());
  REQUIRE(second.ok());
  const auto end = second->log_end();

  CHECK(continue_epoch(root, *second, 2, 2).err().code == errc::invalid_argument);
  epoch_open_info info;
  REQUIRE(continue_epoch(root, *second, 2, 3, &info).ok());
  CHECK(info.took_over);
  CHECK(info.start == end);
  CHECK(info.previous_epoch == 2);
  auto records = read_takeover_records(root);
  REQUIRE(records.ok());
  REQUIRE(records->back().epoch == 3);
  CHECK(records->back().start == end);
  CHECK(second->dir() == epoch_log_dir(root, 3));
  CHECK_FALSE(fs::exists(epoch_log_dir(root, 2)));  // epoch 2 never wrote

  auto more = fill(*second, 3, 100);
  CHECK(more.front().first == end.value);
  REQUIRE(second->flush().ok());
  CHECK(fs::exists(epoch_log_dir(root, 3)));
  CHECK(read_all(*second) == written + more);
  // Written at 3 now: going on again needs a takeover.
  CHECK(continue_epoch(root, *second, 3, 4).err().code == errc::invalid_argument);
  REQUIRE(second->close().ok());

  // A restart of epoch 3 and a later takeover read the same chain.
  auto reopened = open_epoch(root, 3, small());
  REQUIRE(reopened.ok());
  CHECK(read_all(*reopened) == written + more);
  REQUIRE(reopened->close().ok());
  auto later = open_epoch(root, 4, small());
  REQUIRE(later.ok());
  CHECK(read_all(*later) == written + more);

  // An epoch another owner took over meanwhile cannot go on.
  auto stale = open_epoch(root, 5, small());
  REQUIRE(stale.ok());
  auto other = open_epoch(root, 6, small());
  REQUIRE(other.ok());
  CHECK(continue_epoch(root, *stale, 5, 7).err().code == errc::epoch_over);
}

TEST_CASE("shared storage: an epoch's first byte waits for its takeover record to be durable", "[storage][shared]") {
  temp_dir tmp;
  auto root = tmp.sub("t-0");
  auto first = open_epoch(root, 1, small());
  REQUIRE(first.ok());
  fill(*first, 3, 1);
  REQUIRE(first->flush().ok());
  // The takeover writes its record without fsync; the first append syncs
  // it before it creates the epoch's directory. Gone meanwhile (never
  // durable), the append fails and the epoch writes nothing.
  for (bool continued : {false, true}) {
    INFO((continued ? "continued" : "taken over"));
    const uint64_t epoch = continued ? 4 : 2;
    auto lg = open_epoch(root, continued ? 3 : 2, small());
    REQUIRE(lg.ok());
    if (continued)
      REQUIRE(continue_epoch(root, *lg, 3, 4).ok());
    REQUIRE(fs::exists(takeover_record_path(root, epoch)));
    fs::remove(takeover_record_path(root, epoch));
    auto b = encode_batch(make_records(1, 9, 10)).value();
    CHECK_FALSE(lg->append(b).ok());
    CHECK_FALSE(fs::exists(epoch_log_dir(root, epoch)));
  }
  auto ok = open_epoch(root, 5, small());
  REQUIRE(ok.ok());
  auto b = encode_batch(make_records(1, 9, 10)).value();
  REQUIRE(ok->append(b).ok());
  CHECK(fs::exists(epoch_log_dir(root, 5)));
}
