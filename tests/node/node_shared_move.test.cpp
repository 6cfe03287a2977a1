// The zero-copy move on three real moonmq-node processes sharing one
// directory (docs/shared-storage.md "Moves and failover"): a partition
// moves S -> D through the ordinary move protocol while a producer keeps
// writing through S; D confirms by itself as soon as it applies the
// cutover, and S completes on seeing that in the log; the move ends done,
// copies nothing (its row says
// "copy":"none" with 0 bytes, the destination's data directory holds no
// copy, the source's epoch directory stays whole), and every acknowledged
// record reads back at its offset from D. Then a partition of ~50 MB moves
// in about the time one of ~50 KB does.

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "tests/node/shared_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace moonmq::test::shared_storage;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

/// File name -> size of every file in `dir`.
std::map<std::string, uintmax_t> files_of(const std::string& dir) {
  std::map<std::string, uintmax_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec))
      out[e.path().filename().string()] = e.file_size(ec);
  return out;
}

/// The broker that owns topic/0, as broker 0 routes it.
size_t owner_of(const move_cluster& c, const std::string& topic) {
  std::optional<size_t> owner;
  REQUIRE(wait_until([&] { return (owner = owner_seen_by(c, 0, topic, 0)).has_value(); }, 10s));
  return *owner;
}

/// Moves topic/0 from `from` to `to` and returns the seconds from the
/// submission to `done`; REQUIREs done with nothing copied.
double timed_move(const move_cluster& c, const std::string& topic, size_t from, size_t to) {
  auto t0 = clock_type::now();
  auto sub = submit_move(c.admin(from), topic, 0, c.id(to));
  REQUIRE(sub["accepted"].size() == 1);
  auto row = wait_terminal(c, from, topic, 0, c.id(from), 60s);
  auto took = seconds_since(t0);
  INFO(row.dump() << "\n" << log_tails(c));
  REQUIRE(row.value("state", "") == "done");
  CHECK(row.value("copy", "") == "none");
  CHECK(row.value("bytes_copied", int64_t{-1}) == 0);
  return took;
}

/// Starts b1, b2 and b3 with `settings`, b2 with the test hook
/// MOONMQ_TEST_WITHHOLD_OWN_DONE=1 (it confirms its moves in place and
/// serves, but never proposes their `done`), and waits for a leader.
void start_with_done_withheld(move_cluster& c) {
  c.start(0);
  ::setenv("MOONMQ_TEST_WITHHOLD_OWN_DONE", "1", 1);
  c.start(1);
  ::unsetenv("MOONMQ_TEST_WITHHOLD_OWN_DONE");
  c.start(2);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
}

/// Creates `topic` (one partition, on b1) and fills it; then, with
/// `during` writing through b1, moves it to b2 and waits for b2's confirm
/// in place. Returns the records acknowledged before the move.
std::map<int64_t, sent_record> move_to_b2_in_place(move_cluster& c, const std::string& topic,
                                                   std::unique_ptr<producer>& during) {
  create_topic(c.client(0), topic, 1);
  REQUIRE(owner_of(c, topic) == 0);
  auto before = fill(c.client(0), topic, 0, 200, 20, 200, "a");
  // Through the source, which forwards to b2 while b2 owns the partition.
  during = std::make_unique<producer>(c.client(0), topic, 0, 5, "b");
  REQUIRE(wait_until([&] { return during->ok_requests() >= 20; }, 10s));
  auto sub = submit_move(c.admin(0), topic, 0, "b2");
  REQUIRE(sub["accepted"].size() == 1);
  REQUIRE(wait_until([&] { return c.logs(1).find("copy=none own=true") != std::string::npos; }, 20s));
  return before;
}

}  // namespace

TEST_CASE("shared storage: a move copies nothing, and every acknowledged record reads back from the destination",
          "[node][shared][move][scenario]") {
  temp_dir shared;
  move_cluster c{{"b1", "b2", "b3"}, raft_config({"Storage.SharedDir=" + shared.path()})};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));

  create_topic(c.client(0), "zm", 1);
  auto first = fill(c.client(0), "zm", 0, 300, 20, 200, "a");
  const size_t src = owner_of(c, "zm");
  const size_t dst = (src + 1) % 3;
  INFO("move " << c.id(src) << " -> " << c.id(dst));
  auto root = partition_root(shared.path(), "zm-0");
  REQUIRE_FALSE(root.empty());
  const auto records_before = epochs_of(root);
  REQUIRE(records_before.size() == 1);
  const auto src_epoch_dir = root + "/e" + records_before.back();

  // A group's committed offset, in the source's epoch of the partition.
  REQUIRE(call(c.client(src), "POST", "/v1/groups/gz/offsets", R"({"offsets":[{"topic":"zm","partition":0,"offset":7}]})")
            .status == 200);
  CHECK(fs::exists(root + "/offsets"));

  // A producer keeps writing through the source for the whole move.
  producer during(c.client(src), "zm", 0, 5, "b");
  REQUIRE(wait_until([&] { return during.ok_requests() >= 20; }, 10s));
  auto sub = submit_move(c.admin(src), "zm", 0, c.id(dst));
  REQUIRE(sub["accepted"].size() == 1);
  auto row = wait_terminal(c, src, "zm", 0, c.id(src), 60s);
  INFO(row.dump() << "\n" << log_tails(c));
  REQUIRE(row.value("state", "") == "done");
  CHECK(row.value("copy", "") == "none");
  CHECK(row.value("bytes_copied", int64_t{-1}) == 0);
  CHECK(row.value("bytes_total", int64_t{-1}) == 0);
  CHECK(row.value("error", "") == "");
  // The destination confirmed in place once it applied the cutover (its
  // `done` step at the cutover's epoch is the confirm), and the source
  // completed on seeing the move done in the log, without sending a
  // confirm request.
  const auto move_id = row.value("move_id", std::string{});
  REQUIRE_FALSE(move_id.empty());
  CHECK(c.logs(dst).find("move.own_confirm move=" + move_id) != std::string::npos);
  CHECK(c.logs(dst).find("copy=none own=true") != std::string::npos);
  CHECK(c.logs(src).find("move.confirmed_in_log move=" + move_id) != std::string::npos);
  // The group offsets' push was merged at the cutover's epoch, where the
  // destination stays, not refused and retried.
  CHECK(c.logs(src).find("move.offsets_retry move=" + move_id) == std::string::npos);

  // The source's epoch directory after its seal, as the chain reads it.
  const auto src_files = files_of(src_epoch_dir);
  CHECK_FALSE(src_files.empty());

  // The producer goes on through the source, forwarded to the destination.
  const int ok_at_done = during.ok_requests();
  CHECK(wait_until([&] { return during.ok_requests() >= ok_at_done + 20; }, 20s));
  during.stop();
  CHECK(during.double_acks().empty());

  // New epochs were taken over in the shared directory; the source's epoch
  // directory is unchanged (no reset, nothing appended after the seal).
  const auto records_after = epochs_of(root);
  INFO("epoch records before " << records_before.size() << ", after " << records_after.size());
  // One takeover: the destination serves at the cutover's epoch.
  CHECK(records_after.size() == records_before.size() + 1);
  CHECK(records_after.front() == records_before.front());
  CHECK(files_of(src_epoch_dir) == src_files);
  // Nothing was copied to the destination's own disk.
  CHECK_FALSE(fs::exists(c.data_dir(dst) + "/zm-0"));
  CHECK_FALSE(fs::exists(c.data_dir(src) + "/zm-0"));
  // Its seal lived in its own data directory and is gone once confirmed.
  CHECK(files_of(c.data_dir(dst) + "/shared-seals").empty());

  // Every acknowledged record is at its offset on the destination, which
  // serves the partition itself.
  std::map<int64_t, sent_record> all = first;
  auto acked = during.acked();
  INFO("acknowledged during the move: " << acked.size() << ", failed requests: " << during.failed_requests());
  for (const auto& [off, r] : acked) {
    CHECK(all.count(off) == 0);
    all[off] = r;
  }
  CHECK(who_serves(c.client(dst), "zm", 0).first == 200);
  CHECK(who_serves(c.client(src), "zm", 0) == std::make_pair(421, c.id(dst)));
  check_acked(all, read_partition(c.client(dst), "zm", 0));
  // The destination takes writes itself after the move.
  auto after = fill(c.client(dst), "zm", 0, 50, 10, 200, "c");
  CHECK(after.begin()->first >= all.rbegin()->first + 1);
  // The group's offset moved with the partition (nothing copied: carried
  // forward in the shared directory), and the destination takes commits.
  auto offsets = call(c.client(dst), "GET", "/v1/groups/gz/offsets?topic=zm");
  INFO(offsets.raw);
  REQUIRE(offsets.status == 200);
  CHECK(offsets.body["offsets"].size() == 1);
  CHECK(offsets.body["offsets"][0].value("offset", int64_t{-1}) == 7);
  CHECK(call(c.client(src), "POST", "/v1/groups/gz/offsets", R"({"offsets":[{"topic":"zm","partition":0,"offset":9}]})")
          .status == 200);
  CHECK(call(c.client(src), "GET", "/v1/groups/gz/offsets?topic=zm").body["offsets"][0].value("offset", int64_t{-1}) == 9);

  // The confirm sent again after the destination confirmed and took writes
  // (its answer was lost, or the controller confirmed in a fenced source's
  // place and the source came back): with the cutover's epoch it is
  // answered as confirmed, not as an end mismatch the source would retry
  // for ever. Without it (an older source) the mismatch stands.
  const auto controller = call(c.admin(dst), "GET", "/admin/cluster").body["controller"];
  const moonmq::transport::header_list fence{
    {"X-Controller-Epoch", std::to_string(controller.value("epoch", int64_t{0}))},
    {"X-Controller-Id", controller.value("id", std::string{})}};
  const int64_t cutover_epoch = std::stoll(records_before.back()) + 1;
  json again{{"from", c.id(src)}, {"log_end_offset", all.rbegin()->first + 1}, {"owner_epoch", cutover_epoch}};
  auto confirmed = cluster_call(c.cluster_port(dst), "POST", "/cluster/partitions/zm/0/confirm", again.dump(), fence);
  INFO(confirmed.raw);
  CHECK(confirmed.status == 200);
  CHECK(confirmed.body.value("already_confirmed", false));
  CHECK(confirmed.body.value("log_end_offset", int64_t{-1}) > all.rbegin()->first + 1);
  again.erase("owner_epoch");
  auto mismatch = cluster_call(c.cluster_port(dst), "POST", "/cluster/partitions/zm/0/confirm", again.dump(), fence);
  INFO(mismatch.raw);
  CHECK(mismatch.status == 409);
  CHECK(mismatch.body.value("error", "") == "offset_mismatch");
  CHECK(who_serves(c.client(dst), "zm", 0).first == 200);
}

TEST_CASE("shared storage: a move of ~50 MB takes about as long as one of ~50 KB", "[node][shared][move][scenario]") {
  temp_dir shared;
  move_cluster c{{"b1", "b2", "b3"}, raft_config({"Storage.SharedDir=" + shared.path()})};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "small", 1);
  create_topic(c.client(0), "big", 1);
  fill(c.client(0), "small", 0, 50, 10, 1000, "s");        // ~50 KB
  fill(c.client(0), "big", 0, 50000, 500, 1000, "g");      // ~50 MB
  const size_t small_src = owner_of(c, "small");
  const size_t big_src = owner_of(c, "big");
  auto small_s = timed_move(c, "small", small_src, (small_src + 1) % 3);
  auto big_s = timed_move(c, "big", big_src, (big_src + 1) % 3);
  std::printf("shared move: ~50 KB partition %.3f s, ~50 MB partition %.3f s\n", small_s, big_s);
  INFO("small " << small_s << " s, big " << big_s << " s");
  CHECK(big_s < 3 * small_s + 2.0);
  // The big partition reads whole from its new owner.
  auto read = read_partition(c.client((big_src + 1) % 3), "big", 0);
  CHECK(read.records.size() == 50000);
}

TEST_CASE("shared storage: a destination that served before its move was done is taken back only after its lease, "
          "with every record it acknowledged",
          "[node][shared][move][scenario]") {
  // docs/shared-storage.md "Take-back": b2 confirms in place and takes
  // writes at the cutover's epoch, but withholds its `done` (the test hook),
  // so after MoveConfirmTimeoutSeconds the source b1 takes the partition
  // back. b1's takeover waits LeaseMs + LeaseMarginMs (700 ms here) from the
  // moment it sees the take-back, so that b2 has stopped acknowledging
  // before b1 reads where b2's epoch ends.
  temp_dir shared;
  auto settings = shared_config(shared);
  settings.push_back("Cluster.MoveConfirmTimeoutSeconds=2");
  move_cluster c{{"b1", "b2", "b3"}, settings};
  start_with_done_withheld(c);
  std::unique_ptr<producer> writer;
  auto all = move_to_b2_in_place(c, "tk", writer);
  auto& during = *writer;
  const int ok_at_confirm = during.ok_requests();
  auto row = wait_terminal(c, 0, "tk", 0, "b1", 30s);
  const int ok_at_end = during.ok_requests();
  INFO(row.dump() << "\n" << lines_with(c, "move.") << lines_with(c, "partition.takeover_held"));
  CHECK(row.value("state", "") == "failed");
  CHECK(row.value("error", "").find("took the partition back") != std::string::npos);
  CHECK(c.logs(1).find("move.own_done_withheld") != std::string::npos);
  // b2 acknowledged writes at the cutover's epoch before the take-back.
  INFO("acknowledged requests: " << ok_at_confirm << " at b2's confirm, " << ok_at_end << " when the move failed");
  CHECK(ok_at_end - ok_at_confirm >= 10);
  // b1 held its takeover, then serves again.
  CHECK(c.logs(0).find("partition.takeover_held topic=tk partition=0 epoch=3 hold_ms=700") != std::string::npos);
  REQUIRE(wait_until([&] { return who_serves(c.client(0), "tk", 0).first == 200; }, 10s));
  const int ok_after = during.ok_requests();
  CHECK(wait_until([&] { return during.ok_requests() >= ok_after + 20; }, 20s));
  during.stop();
  CHECK(during.double_acks().empty());
  auto acked = during.acked();
  INFO("acknowledged during the test: " << acked.size() << ", failed requests: " << during.failed_requests());
  for (const auto& [off, r] : acked) {
    CHECK(all.count(off) == 0);
    all[off] = r;
  }
  // Every record acknowledged by b1 before the move, by b2 at the cutover's
  // epoch, and by b1 after the take-back reads back at its offset.
  check_acked(all, read_partition(c.client(0), "tk", 0));
  CHECK(who_serves(c.client(1), "tk", 0) == std::make_pair(421, std::string{"b1"}));
}

TEST_CASE("shared storage: a destination restarted after it confirmed in place, before its done applied, finishes "
          "the move done",
          "[node][shared][move][scenario]") {
  // b2 confirms in place and serves, withholding its `done` (the test
  // hook); it is killed and restarted without the hook. Its durable seal is
  // gone and its log has moved past the sealed end with the writes it took,
  // so its own confirm after the restart checks only that the end is at
  // or past the sealed end, and proposes the `done` then.
  temp_dir shared;
  move_cluster c{{"b1", "b2", "b3"}, shared_config(shared)};
  start_with_done_withheld(c);
  std::unique_ptr<producer> writer;
  auto all = move_to_b2_in_place(c, "tr", writer);
  auto& during = *writer;
  const int ok_at_confirm = during.ok_requests();
  REQUIRE(wait_until([&] { return during.ok_requests() >= ok_at_confirm + 10; }, 10s));  // b2 took writes
  c.kill(1);
  c.restart(1);
  auto row = wait_terminal(c, 0, "tr", 0, "b1", 60s);
  INFO(row.dump() << "\n" << lines_with(c, "move."));
  CHECK(row.value("state", "") == "done");
  CHECK(c.logs(1).find("move.own_done move=") != std::string::npos);
  CHECK(c.logs(0).find("partition.takeover_held") == std::string::npos);  // never taken back
  REQUIRE(wait_until([&] { return who_serves(c.client(1), "tr", 0).first == 200; }, 10s));
  const int ok_after = during.ok_requests();
  CHECK(wait_until([&] { return during.ok_requests() >= ok_after + 20; }, 20s));
  during.stop();
  CHECK(during.double_acks().empty());
  for (const auto& [off, r] : during.acked()) {
    CHECK(all.count(off) == 0);
    all[off] = r;
  }
  check_acked(all, read_partition(c.client(1), "tr", 0));
}
