#pragma once
// The meeting point of the client routes and the load_meter actor (DESIGN
// §6), no CAF inside so that the routes include it cheaply:
//   - session_probe: the client routes (on Asio threads) report produce and
//     fetch bytes and group-member sightings by client id; the load_meter
//     takes a sample every heartbeat (placement/client_activity.hpp says
//     what a session is).
//   - session_load_view: the load_meter publishes its latest local report
//     (placement::to_json) and GET /cluster/loads reads it as its
//     "session_load" field.
// Both are thread-safe (one mutex each; every call is short).

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "placement/client_activity.hpp"
#include "util/clock.hpp"

namespace moonmq {

class session_probe {
 public:
  /// `client_ttl_ms`: how long a producer/consumer stays a session after its
  /// last request; `member_ttl_ms`: the same for a group member after its
  /// last join/heartbeat (the group session timeout).
  session_probe(int64_t client_ttl_ms, int64_t member_ttl_ms)
    : client_ttl_ms_(client_ttl_ms), member_ttl_ms_(member_ttl_ms), activity_(util::wall_ms()) {}

  void produced(std::string_view client, uint64_t bytes) {
    std::lock_guard<std::mutex> g{mtx_};
    activity_.produced(client, bytes, util::wall_ms(), client_ttl_ms_);
  }
  void fetched(std::string_view client, uint64_t bytes) {
    std::lock_guard<std::mutex> g{mtx_};
    activity_.fetched(client, bytes, util::wall_ms(), client_ttl_ms_);
  }
  void member_seen(std::string_view group, std::string_view member, std::string_view client) {
    std::lock_guard<std::mutex> g{mtx_};
    activity_.member_seen(group, member, client, util::wall_ms(), member_ttl_ms_);
  }
  void member_left(std::string_view group, std::string_view member) {
    std::lock_guard<std::mutex> g{mtx_};
    activity_.member_left(group, member);
  }
  /// The interval since the previous call (the load_meter's heartbeat).
  placement::activity_sample sample(int64_t at_ms) {
    std::lock_guard<std::mutex> g{mtx_};
    return activity_.sample(at_ms);
  }

 private:
  std::mutex mtx_;
  int64_t client_ttl_ms_;
  int64_t member_ttl_ms_;
  placement::client_activity activity_;
};

class session_load_view {
 public:
  /// The latest local report as JSON; null before the first heartbeat.
  nlohmann::json get() const {
    std::lock_guard<std::mutex> g{mtx_};
    return current_;
  }
  void set(nlohmann::json report) {
    std::lock_guard<std::mutex> g{mtx_};
    current_ = std::move(report);
  }

 private:
  mutable std::mutex mtx_;
  nlohmann::json current_;
};

}  // namespace moonmq
