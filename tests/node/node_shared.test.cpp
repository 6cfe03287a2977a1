// Shared storage on three real moonmq-node processes sharing one directory
// (docs/shared-storage.md): a partition lives in the shared directory, its
// owner reopens its epoch after a restart, and a stopped owner's partition
// is handed over at the end of its acknowledged records. The stopped owner
// (SIGSTOP longer than its lease, then SIGCONT) acknowledges nothing more,
// and every record acknowledged by either owner reads back at its offset.

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

/// The partition's directory under `shared` (`<topic>-<p>~<created_at>`), or "".
std::string partition_root(const std::string& shared, const std::string& name) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(shared, ec))
    if (e.path().filename().string().rfind(name + "~", 0) == 0)
      return e.path().string();
  return {};
}

/// The takeover records of a partition root, by epoch.
std::vector<std::string> epochs_of(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root + "/epochs", ec))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("shared storage: a stopped owner's partition is handed over at the end of its acknowledged records, and it "
          "acknowledges nothing more",
          "[node][shared][scenario]") {
  temp_dir shared;
  move_cluster c{{"b1", "b2", "b3"},
                 raft_config({"Storage.SharedDir=" + shared.path(), "Cluster.Raft.SessionTimeoutMs=2000",
                              })};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto [owner, heir] = followers(elected->first);
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

  // A restart reopens the same epoch: everything reads back, nothing is taken over.
  c.stop(owner);
  c.restart(owner);
  REQUIRE(agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound));
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

  // Fenced after SessionTimeoutMs; then the handover is allowed.
  auto live = std::vector<size_t>{elected->first, heir};
  json answer_body;
  int status = 0;
  deadline = clock_type::now() + 30s;
  while (clock_type::now() < deadline) {
    auto b = belief_of(c, elected->first);
    if (b && !b->leader.empty()) {
      moonmq::transport::header_list h{{"X-Controller-Epoch", std::to_string(b->term)},
                                       {"X-Controller-Id", b->leader}};
      auto own = cluster_call(c.cluster_port(heir), "POST", "/cluster/owners",
                              json{{"topic", "sh"}, {"partition", 0}, {"owner", c.id(heir)}, {"from", c.id(owner)}}
                                .dump(),
                              h);
      status = own.status;
      answer_body = own.body;
      if (status == 200)
        break;
      INFO(own.raw);
      REQUIRE(status == 409);
      REQUIRE(own.body.value("error", "") == "owner_not_fenced");
    }
    std::this_thread::sleep_for(100ms);
  }
  INFO(answer_body.dump() << "\n" << log_tails(c));
  REQUIRE(status == 200);

  // The heir takes writes at once, continuing at the end of the data.
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
