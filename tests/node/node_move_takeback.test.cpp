// A move whose destination dies for good after the cutover, on three real
// moonmq-node processes with the metadata log (docs/metadata.md "Owner
// epochs"): the log names the destination owner, both copies are sealed and
// only the destination's confirm would unseal one. After
// Cluster.MoveConfirmTimeoutSeconds in `offsets` the source takes the
// partition back by a conditional owner change at the destination's epoch;
// the move ends `failed`, the source serves every record again and takes
// writes, and the MaxConcurrentMoves slot is free for the next move.

#include <catch2/catch.hpp>

#include <csignal>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;

TEST_CASE("a destination gone for good while its move waits for the confirm: the source takes the partition back",
          "[node][metadata][raft][scenario]") {
  constexpr int confirm_timeout_s = 4;
  move_cluster c{{"b1", "b2", "b3"},
                 raft_config({"Cluster.MoveConfirmTimeoutSeconds=" + std::to_string(confirm_timeout_s),
                              "Cluster.MaxConcurrentMoves=1"})};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto [src, dst] = followers(elected->first);
  const std::string from = c.id(src), to = c.id(dst);
  create_topic(c.client(src), "tb", 2);
  // ~4 MB: the copy lasts long enough to catch the cutover, and nothing is
  // written during the move, so it passes draining at once.
  auto acked = fill(c.client(src), "tb", 0, 4000, 500, 1000, "tb");
  auto sub = submit_move(c.admin(src), "tb", 0, to);
  INFO(sub.dump());
  REQUIRE(sub["accepted"].size() == 1);
  // Freeze the destination once the log names it owner: it never confirms.
  std::string seen;
  auto deadline = clock_type::now() + 30s;
  while (clock_type::now() < deadline) {
    auto row = local_row(c, src, "tb", 0);
    seen = row.is_object() ? row.value("state", "") : "";
    if (seen == "cutover" || seen == "draining" || seen == "offsets" || is_terminal(seen))
      break;
    std::this_thread::sleep_for(1ms);
  }
  INFO("source journal at " << seen);
  REQUIRE((seen == "cutover" || seen == "draining" || seen == "offsets"));
  c.signal(dst, SIGSTOP);
  // A second move of the same source waits for the slot the first holds.
  auto next = submit_move(c.admin(src), "tb", 1, c.id(elected->first));
  INFO(next.dump());
  REQUIRE(next["accepted"].size() == 1);
  REQUIRE(!wait_move(c.admin(src), "tb", 0, from, {"offsets"}, 20s).is_null());
  c.kill(dst);  // gone for good: never restarted
  auto killed = clock_type::now();

  auto row = wait_terminal(c, src, "tb", 0, from, std::chrono::seconds(confirm_timeout_s + 20));
  auto took_s = std::chrono::duration<double>(clock_type::now() - killed).count();
  INFO(row.dump() << "\n" << lines_with(c, "move.taking_back"));
  CHECK(row.value("state", "") == "failed");
  CHECK(row.value("error", "").find("took the partition back") != std::string::npos);
  WARN("taken back " << took_s << " s after the destination died (MoveConfirmTimeoutSeconds=" << confirm_timeout_s
                     << ")");
  // Every acknowledged record is served by the source again, which takes writes.
  REQUIRE(wait_until([&] { return who_serves(c.client(src), "tb", 0).first == 200; }, 5s));
  CHECK(count_loss(acked, read_partition(c.client(src), "tb", 0)).ok());
  std::map<int64_t, sent_record> after;
  auto write = produce_one(c.client(src), "tb", 0, "after", after, 10s);
  INFO(write.raw);
  CHECK(write.status == 200);
  // The owner epoch moved: created at 1, the cutover's change, the take-back
  // and the rollback's own change (the destination's confirm never applied).
  json epoch_row;
  auto cluster = call(c.admin(src), "GET", "/admin/cluster");
  for (const auto& p : cluster.body["partitions"])
    if (p.value("topic", "") == "tb" && p.value("partition", -1) == 0)
      epoch_row = p;
  INFO(epoch_row.dump());
  CHECK(epoch_row.value("owner_epoch", 0) >= 3);
  // The other live broker routes the partition to the source too.
  size_t other = 3 - src - dst;
  CHECK(wait_until([&] { return owner_seen_by(c, other, "tb", 0) == std::optional<size_t>{src}; }, 5s));
  // The slot is free: the queued move runs (to a live broker) and ends done.
  auto second = wait_terminal(c, src, "tb", 1, from, 30s);
  INFO(second.dump());
  CHECK(second.value("state", "") == "done");
}

