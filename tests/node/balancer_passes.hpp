#pragma once
// Helpers of the real-process balance loop tests (node_balancer*.test.cpp):
// a poller of GET /admin/balancer that keeps every pass it sees, and readers
// of a pass's plan, brokers and the cluster's owners.

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tests/node/move_cluster.hpp"
#include "tests/support/metrics_text.hpp"

namespace moonmq::test::balancer_passes {

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;


/// The last `n` bytes of every broker's logs, for failure messages.
inline std::string log_tails(const move_cluster& c, size_t n = 8000) {
  auto all = c.all_logs();
  return all.size() <= n ? all : "...\n" + all.substr(all.size() - n);
}

/// GET /admin/balancer (REQUIRE 200).
inline json balancer_status(uint16_t admin) {
  auto a = call(admin, "GET", "/admin/balancer");
  INFO(a.raw);
  REQUIRE(a.status == 200);
  REQUIRE(a.body.is_object());
  return a.body;
}

/// Polls one broker's GET /admin/balancer every 50 ms on its own thread and
/// keeps every pass it saw, by pass number (the `passes` counter when that
/// pass was `last_pass`), as last seen (move results are filled in after
/// the pass). Admin port read through `port` on every poll, so that it
/// follows a restart of the watched broker.
class pass_watcher {
public:
  explicit pass_watcher(std::function<uint16_t()> port) : port_(std::move(port)) {
    thread_ = std::thread([this] { run(); });
  }
  ~pass_watcher() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }
  std::map<uint64_t, json> passes() const {
    std::lock_guard g{mu_};
    return passes_;
  }
  json status() const {
    std::lock_guard g{mu_};
    return status_;
  }
  uint64_t count() const {
    std::lock_guard g{mu_};
    return passes_.empty() ? 0 : passes_.rbegin()->first;
  }
  /// Waits until `pred(passes)` holds; false after `timeout`.
  bool wait(const std::function<bool(const std::map<uint64_t, json>&)>& pred, std::chrono::milliseconds timeout) const {
    return wait_until([&] { return pred(passes()); }, timeout);
  }
  /// Waits until pass `n` was seen.
  bool wait_pass(uint64_t n, std::chrono::milliseconds timeout) const {
    return wait_until([&] { return count() >= n; }, timeout);
  }

private:
  void run() {
    while (!stop_) {
      auto a = call(port_(), "GET", "/admin/balancer");
      if (a.status == 200 && a.body.is_object()) {
        std::lock_guard g{mu_};
        status_ = a.body;
        auto n = a.body.value("passes", uint64_t{0});
        if (n > 0 && a.body["last_pass"].is_object())
          passes_[n] = a.body["last_pass"];
      }
      std::this_thread::sleep_for(50ms);
    }
  }
  std::function<uint16_t()> port_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<uint64_t, json> passes_;
  json status_;
  std::thread thread_;
};

/// The planned moves of a pass (empty when it has no plan).
inline json actions_of(const json& pass) {
  if (pass.contains("plan") && pass["plan"].is_object() && pass["plan"]["actions"].is_array())
    return pass["plan"]["actions"];
  return json::array();
}

/// True when some pass of `ps` planned an action.
inline bool any_planned(const std::map<uint64_t, json>& ps) {
  for (const auto& [n, p] : ps)
    if (!actions_of(p).empty())
      return true;
  return false;
}

/// The entry of broker `id` in a pass's `brokers` (null when absent).
inline json broker_entry(const json& pass, const std::string& id) {
  if (pass.contains("brokers"))
    for (const auto& b : pass["brokers"])
      if (b.value("id", "") == id)
        return b;
  return json{};
}

/// A load of broker `id` on `resource` in a pass's plan.brokers_before
/// (nullopt without a plan or that broker).
inline std::optional<double> load_before(const json& pass, const std::string& id, const std::string& resource) {
  if (!pass.contains("plan") || !pass["plan"].is_object())
    return std::nullopt;
  const auto& before = pass["plan"]["brokers_before"];
  if (!before.is_object() || !before.contains(id) || !before[id].contains(resource) || !before[id][resource].is_number())
    return std::nullopt;
  return before[id][resource].get<double>();
}

/// Partitions of `topic` per owner, from GET /admin/cluster on `admin`.
inline std::map<std::string, int> owner_counts(uint16_t admin, const std::string& topic) {
  std::map<std::string, int> out;
  auto a = call(admin, "GET", "/admin/cluster");
  if (a.status != 200 || !a.body.is_object())
    return out;
  for (const auto& p : a.body["partitions"])
    if (p.value("topic", "") == topic && p["owner"].is_string())
      ++out[p["owner"].get<std::string>()];
  return out;
}

/// The owner of topic/partition from GET /admin/cluster (empty when unknown).
inline std::string owner_of(uint16_t admin, const std::string& topic, int partition) {
  auto a = call(admin, "GET", "/admin/cluster");
  if (a.status == 200 && a.body.is_object())
    for (const auto& p : a.body["partitions"])
      if (p.value("topic", "") == topic && p.value("partition", -1) == partition && p["owner"].is_string())
        return p["owner"].get<std::string>();
  return {};
}

inline std::string metrics_text(uint16_t admin) {
  auto a = call(admin, "GET", "/metrics");
  INFO(a.raw);
  REQUIRE(a.status == 200);
  return a.raw;
}

/// Checks every pass of a loop for what must always hold: loads finite and
/// not negative, and no planned move toward a broker that is not a
/// destination in that pass (dead, excluded, or holding a partition whose
/// window is incomplete). Returns the number of passes checked.
inline size_t check_every_pass(const std::map<uint64_t, json>& passes) {
  for (const auto& [n, pass] : passes) {
    INFO("pass " << n << ": " << pass.dump());
    for (const char* side : {"brokers_before", "brokers_after"})
      if (pass.contains("plan") && pass["plan"][side].is_object())
        for (const auto& [id, loads] : pass["plan"][side].items())
          for (const auto& [res, v] : loads.items()) {
            INFO(side << " " << id << " " << res);
            REQUIRE(v.is_number());
            CHECK(v.get<double>() >= 0.0);
            CHECK(v.get<double>() < 1e12);  // no counter wrap-around turned into a rate
          }
    for (const auto& a : actions_of(pass)) {
      auto to = broker_entry(pass, a.value("to", ""));
      INFO("action " << a.dump());
      REQUIRE(to.is_object());
      CHECK(to.value("alive", false));
      CHECK_FALSE(to.value("excluded", true));
      CHECK_FALSE(to.value("slow", true));
      CHECK_FALSE(to.value("incomplete_window", true));
    }
  }
  return passes.size();
}

/// PATCH /admin/balancer through `admin`: a live loop from now on, on
/// whichever broker is the controller (the setting is in the metadata log).
inline void turn_on_balancer(uint16_t admin) {
  auto a = call(admin, "PATCH", "/admin/balancer", R"({"Enabled":true,"DryRun":false})");
  INFO(a.raw);
  REQUIRE(a.status == 200);
}

/// Every record of `filled` (partition → offset → record) is read back from
/// its partition's owner (brokers b1..b3 of `c`), whole from offset 0.
inline void check_readable(move_cluster& c, const std::string& topic,
                    const std::map<int, std::map<int64_t, sent_record>>& filled) {
  std::map<std::string, uint16_t> client_of{{"b1", c.client(0)}, {"b2", c.client(1)}, {"b3", c.client(2)}};
  for (const auto& [p, records] : filled) {
    auto owner = owner_of(c.admin(0), topic, p);
    INFO("partition " << p << " owner " << owner);
    REQUIRE(client_of.count(owner));
    auto now = read_partition(client_of[owner], topic, p);
    CHECK(now.log_start == 0);
    CHECK(now.log_end == static_cast<int64_t>(records.size()));
    int wrong = 0;
    for (const auto& [off, rec] : records) {
      auto it = now.records.find(off);
      if (it == now.records.end() || it->second["key"] != rec.key || it->second["value"] != rec.value)
        ++wrong;
    }
    CHECK(wrong == 0);
  }
}


}  // namespace moonmq::test::balancer_passes
