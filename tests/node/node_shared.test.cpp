// Shared storage on three real moonmq-node processes sharing one directory
// (docs/shared-storage.md): a partition lives in the shared directory, its
// owner reopens its epoch after a restart, and a dead or frozen owner's
// partitions fail over to the others at the end of their acknowledged
// records (the controller's failover, docs/balancer.md). A frozen owner
// (SIGSTOP longer than its lease, then SIGCONT) acknowledges nothing more,
// and every acknowledged record reads back at its offset.

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>

#include "tests/node/placement_checks.hpp"
#include "tests/node/shared_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace moonmq::test::shared_storage;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST_CASE("shared storage: a frozen owner's partition fails over at the end of its acknowledged records, and it "
          "acknowledges nothing more",
          "[node][shared][scenario]") {
  temp_dir shared;
  move_cluster c{{"b1", "b2", "b3"}, shared_config(shared, 5000)};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  const size_t owner = followers(elected->first).first;
  create_topic(c.client(owner), "sh", 1);
  auto first = fill(c.client(owner), "sh", 0, 300, 20, 200, "a");
  REQUIRE(first.begin()->first == 0);

  // The data is in the shared directory, in the first epoch's log, and not
  // in the owner's own data directory.
  auto root = partition_root(shared.path(), "sh-0");
  INFO("shared root " << root);
  REQUIRE_FALSE(root.empty());
  CHECK(fs::exists(root + "/e00000000000000000001"));
  CHECK(epochs_of(root) == std::vector<std::string>{"00000000000000000001"});
  CHECK_FALSE(fs::exists(c.data_dir(owner) + "/sh-0"));

  // A restart (shorter than SessionTimeoutMs: no failover) reopens the same
  // epoch: everything reads back, nothing is taken over.
  c.stop(owner);
  c.restart(owner);
  REQUIRE(agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound));
  // It serves once its lease is renewed (one round trip with the leader).
  auto serving = clock_type::now() + 10s;
  while (who_serves(c.client(owner), "sh", 0).first != 200 && clock_type::now() < serving)
    std::this_thread::sleep_for(20ms);
  check_acked(first, read_partition(c.client(owner), "sh", 0));
  CHECK(epochs_of(root).size() == 1);

  // A producer keeps writing through the owner while it is frozen: what was
  // in flight then must never be acknowledged after the handover.
  producer during(c.client(owner), "sh", 0, 1, "b");
  auto deadline = clock_type::now() + 20s;
  while (during.ok_requests() < 50 && clock_type::now() < deadline)
    std::this_thread::sleep_for(5ms);
  REQUIRE(during.ok_requests() >= 50);
  c.signal(owner, SIGSTOP);

  // Fenced after SessionTimeoutMs; once it has been silent for its lease
  // and margin, the controller hands its partition to a live broker.
  const auto frozen_at = clock_type::now();
  std::optional<size_t> heir_seen;
  deadline = frozen_at + 30s;
  while (clock_type::now() < deadline && !heir_seen) {
    auto owners = cluster_call(c.cluster_port(elected->first), "GET", "/cluster/owners").body;
    for (const auto& row : owners.value("owners", json::array()))
      if (row.value("topic", "") == "sh" && row.value("partition", -1) == 0 && row.value("owner", "") != c.id(owner))
        heir_seen = index_of(c, row.value("owner", ""));
    if (!heir_seen)
      std::this_thread::sleep_for(50ms);
  }
  INFO(log_tails(c));
  REQUIRE(heir_seen);
  const size_t heir = *heir_seen;
  REQUIRE(heir != owner);
  std::printf("failover: owner %s frozen, %s owns its partition after %.2f s\n", c.id(owner).c_str(),
              c.id(heir).c_str(), seconds_since(frozen_at));

  // The heir takes writes at once (after its takeover of the partition),
  // continuing at the end of the data.
  auto second = fill(c.client(heir), "sh", 0, 100, 10, 200, "c");
  const auto acked_before = during.acked();
  const int64_t end_before = acked_before.empty() ? 300 : acked_before.rbegin()->first + 1;
  CHECK(second.begin()->first >= end_before);
  CHECK(epochs_of(root).size() == 2);

  // The frozen owner wakes up: whatever it had in flight is refused.
  c.signal(owner, SIGCONT);
  std::this_thread::sleep_for(2s);
  during.stop();
  auto acked = during.acked();
  INFO("acknowledged by the old owner: " << acked.size() << ", after the freeze: " << acked.size() - acked_before.size()
                                         << ", failed requests: " << during.failed_requests());
  CHECK(during.double_acks().empty());
  // Whatever it acknowledged (before the freeze, or through forwarding to
  // the heir after it learned the change) is in the log at its offset.
  std::map<int64_t, sent_record> all = first;
  for (const auto& [off, r] : acked) {
    CHECK(all.count(off) == 0);
    all[off] = r;
  }
  for (const auto& [off, r] : second) {
    CHECK(all.count(off) == 0);
    all[off] = r;
  }
  auto now = read_partition(c.client(heir), "sh", 0);
  check_acked(all, now);
  // The old owner, caught up, serves nothing itself: it names the heir.
  CHECK(who_serves(c.client(owner), "sh", 0) == std::make_pair(421, c.id(heir)));
}

TEST_CASE("shared storage: kill -9 of one of three brokers: its partitions take writes again on the others with "
          "every acknowledged record at its offset",
          "[node][shared][scenario]") {
  temp_dir shared;
  move_cluster c{{"b1", "b2", "b3"}, shared_config(shared)};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto [victim, other] = followers(elected->first);
  constexpr int partitions = 3;
  create_topic(c.client(victim), "kx", partitions);
  // Producers through a broker that survives: forwarded to the owner until
  // it dies, then refused until the partition fails over, then served.
  std::vector<std::unique_ptr<producer>> writers;
  for (int p = 0; p < partitions; ++p)
    writers.push_back(std::make_unique<producer>(c.client(other), "kx", p, 5, "k" + std::to_string(p)));
  auto deadline = clock_type::now() + 20s;
  auto all_started = [&] {
    for (auto& w : writers)
      if (w->ok_requests() < 20)
        return false;
    return true;
  };
  while (!all_started() && clock_type::now() < deadline)
    std::this_thread::sleep_for(10ms);
  REQUIRE(all_started());
  // A group's committed offsets, stored with each partition's owner: in
  // the shared directory, so they outlive the victim.
  json commit{{"offsets", json::array()}};
  for (int p = 0; p < partitions; ++p)
    commit["offsets"].push_back(json{{"topic", "kx"}, {"partition", p}, {"offset", 10 + p}, {"metadata", "m" + std::to_string(p)}});
  auto committed = call(c.client(other), "POST", "/v1/groups/gk/offsets", commit.dump());
  REQUIRE(committed.status == 200);
  std::vector<int> before;
  for (auto& w : writers)
    before.push_back(w->ok_requests());
  c.kill(victim);
  const auto killed_at = clock_type::now();
  std::vector<double> back_after(partitions, -1.0);
  deadline = killed_at + 40s;
  while (clock_type::now() < deadline) {
    bool all = true;
    for (int p = 0; p < partitions; ++p) {
      if (back_after[static_cast<size_t>(p)] < 0 && writers[static_cast<size_t>(p)]->ok_requests() > before[static_cast<size_t>(p)] + 1)
        back_after[static_cast<size_t>(p)] = seconds_since(killed_at);
      all = all && back_after[static_cast<size_t>(p)] >= 0;
    }
    if (all)
      break;
    std::this_thread::sleep_for(10ms);
  }
  for (int p = 0; p < partitions; ++p)
    std::printf("failover: partition kx-%d takes writes again %.2f s after kill -9\n", p, back_after[static_cast<size_t>(p)]);
  std::this_thread::sleep_for(500ms);
  for (auto& w : writers)
    w->stop();
  INFO(log_tails(c));
  for (int p = 0; p < partitions; ++p) {
    CAPTURE(p);
    CHECK(back_after[static_cast<size_t>(p)] >= 0);
    CHECK(writers[static_cast<size_t>(p)]->double_acks().empty());
    auto owner = owner_seen_by(c, other, "kx", p);
    REQUIRE(owner);
    CHECK(*owner != victim);
    check_acked(writers[static_cast<size_t>(p)]->acked(), read_partition(c.client(*owner), "kx", p));
  }
  // The group's offsets read back from the live brokers, the failed-over
  // partitions' included, and a new commit lands at the new owners.
  auto read_back = call(c.client(other), "GET", "/v1/groups/gk/offsets?topic=kx");
  INFO(read_back.raw);
  REQUIRE(read_back.status == 200);
  CHECK(read_back.body["offsets"] == json::parse(R"([{"topic":"kx","partition":0,"offset":10,"metadata":"m0"},
    {"topic":"kx","partition":1,"offset":11,"metadata":"m1"},{"topic":"kx","partition":2,"offset":12,"metadata":"m2"}])"));
  commit["offsets"][0]["offset"] = 20;
  CHECK(call(c.client(other), "POST", "/v1/groups/gk/offsets", commit.dump()).status == 200);
  auto again = call(c.client(elected->first), "GET", "/v1/groups/gk/offsets?topic=kx");
  REQUIRE(again.status == 200);
  CHECK(again.body["offsets"][0]["offset"] == 20);
}

TEST_CASE("shared storage: TopicPlacement spread starts a topic on every broker and each owner takes writes",
          "[node][shared][scenario]") {
  // docs/metadata.md "Placing a new topic's partitions": the owners the
  // create names open their partitions in the shared directory at epoch 1,
  // as the proposer does its own.
  temp_dir shared;
  auto config = shared_config(shared);
  config.push_back("Cluster.TopicPlacement=spread");
  config.push_back("Placement.HeartbeatMs=300");
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  placement_checks::wait_spreading(c, 3, {"b1", "b2", "b3"});
  create_topic(c.client(0), "spread", 6);
  auto owners = placement_checks::image_owners(c.admin(0), "spread", 6);
  REQUIRE(owners.size() == 6);
  CHECK(placement_checks::image_owner_counts(c.admin(0), "spread", 6)
        == std::map<std::string, int>{{"b1", 2}, {"b2", 2}, {"b3", 2}});
  CHECK(placement_checks::image_owners(c.admin(2), "spread", 6) == owners);
  for (const auto& [p, owner] : owners) {
    INFO("partition " << p << " owned by " << owner);
    auto sent = fill(c.client(0), "spread", p, 20, 10, 100, "s" + std::to_string(p));
    size_t i = owner == "b1" ? 0 : owner == "b2" ? 1 : 2;
    auto read = read_partition(c.client(i), "spread", p);
    REQUIRE(read.records.size() == sent.size());
    for (const auto& [offset, r] : sent)
      CHECK(read.records.at(offset).value("key", "") == r.key);
    CHECK_FALSE(partition_root(shared.path(), "spread-" + std::to_string(p)).empty());
  }
}
