#pragma once
// Checks shared by the partition-move scenarios (node_move.test.cpp and
// node_move_failure.test.cpp) on a move_cluster: the records a partition
// holds after a move against what it held before and what producers had
// acknowledged, which broker serves it, and waits on the newest move's
// journal row that FAIL with every broker's log tail.

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "tests/node/move_cluster.hpp"

namespace moonmq::test::move {

using clock_type = std::chrono::steady_clock;

/// The last `n` bytes of every broker's logs, for failure messages.
inline std::string log_tails(const move_cluster& c, size_t n = 6000) {
  auto all = c.all_logs();
  return all.size() <= n * 3 ? all : "...\n" + all.substr(all.size() - n * 3);
}

/// Seconds from `t0` to now.
inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// The key and value of a fetched record.
inline sent_record as_sent(const json& r) {
  return {r["key"].is_string() ? r["key"].get<std::string>() : "",
          r["value"].is_string() ? r["value"].get<std::string>() : ""};
}

/// Checks that every record of `snapshot` (offset → fetched record) is in
/// `now` under the same offset with the same key, value and timestamp.
inline void check_same_records(const std::map<int64_t, json>& snapshot, const partition_read& now) {
  int missing = 0, differing = 0;
  int64_t first_bad = -1;
  for (const auto& [off, r] : snapshot) {
    auto it = now.records.find(off);
    if (it == now.records.end()) {
      ++missing;
    } else if (it->second["key"] != r["key"] || it->second["value"] != r["value"]
               || it->second["timestamp"] != r["timestamp"]) {
      ++differing;
    } else {
      continue;
    }
    if (first_bad < 0)
      first_bad = off;
  }
  INFO("first bad offset " << first_bad);
  CHECK(missing == 0);
  CHECK(differing == 0);
}

/// Checks that every acknowledged record is in `now` under its acknowledged
/// offset, and that no acknowledged key appears at two offsets.
inline void check_acked(const std::map<int64_t, sent_record>& acked, const partition_read& now) {
  int lost = 0, wrong = 0;
  int64_t first_bad = -1;
  for (const auto& [off, rec] : acked) {
    auto it = now.records.find(off);
    bool bad = false;
    if (it == now.records.end()) {
      ++lost;
      bad = true;
    } else if (as_sent(it->second).key != rec.key || as_sent(it->second).value != rec.value) {
      ++wrong;
      bad = true;
    }
    if (bad && first_bad < 0)
      first_bad = off;
  }
  std::map<std::string, int> seen;
  int duplicated = 0;
  std::set<std::string> acked_keys;
  for (const auto& [off, rec] : acked)
    acked_keys.insert(rec.key);
  for (const auto& [off, r] : now.records) {
    auto key = as_sent(r).key;
    if (acked_keys.count(key) && ++seen[key] == 2)
      ++duplicated;
  }
  INFO("acknowledged " << acked.size() << ", log [" << now.log_start << ", " << now.log_end << "), first bad offset "
                       << first_bad);
  CHECK(lost == 0);
  CHECK(wrong == 0);
  CHECK(duplicated == 0);
}

/// Fetch of one record at the log start: the status, and for a 421 the owner named.
inline std::pair<int, std::string> who_serves(uint16_t client, const std::string& topic, int partition) {
  auto a = call(client, "GET", "/v1/topics/" + topic + "/partitions/" + std::to_string(partition) + "/records?max_records=1");
  std::string owner = a.status == 421 && a.body.is_object() && a.body["owner"].is_string() ? a.body["owner"].get<std::string>() : "";
  return {a.status, owner};
}

/// Waits for the newest move of topic/partition from `from` to reach a
/// terminal state; FAILs with the logs when it does not within `timeout`.
inline json wait_terminal(const move_cluster& c, size_t admin_of, const std::string& topic, int partition,
                          const std::string& from, std::chrono::milliseconds timeout) {
  auto row = wait_move(c.admin(admin_of), topic, partition, from, {}, timeout);
  if (row.is_null() || !is_terminal(row.value("state", "")))
    FAIL("move of " << topic << "/" << partition << " from " << from << " not finished within "
                    << timeout.count() << " ms; last row " << latest_row(c.admin(admin_of), topic, partition, from).dump()
                    << "\n" << log_tails(c));
  return row;
}

/// Waits until the newest move of topic/partition from `from` has copied at
/// least `bytes` (still copying); FAILs otherwise.
inline json wait_copied(const move_cluster& c, size_t admin_of, const std::string& topic, int partition,
                        const std::string& from, int64_t bytes, std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  json row;
  while (clock_type::now() < deadline) {
    row = latest_row(c.admin(admin_of), topic, partition, from);
    if (!row.is_null() && row.value("state", "") == "copying" && row.value("bytes_copied", int64_t{0}) >= bytes)
      return row;
    if (!row.is_null() && row.value("state", "") != "copying" && row.value("state", "") != "queued")
      FAIL("the move left copying before " << bytes << " bytes were copied: " << row.dump() << "\n" << log_tails(c));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL("the move did not copy " << bytes << " bytes in time: " << row.dump() << "\n" << log_tails(c));
  return row;
}

}  // namespace moonmq::test::move
