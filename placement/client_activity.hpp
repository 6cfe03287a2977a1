#pragma once
// What the load_meter counts between two heartbeats (DESIGN §6): active
// client sessions and bytes in/out, overall and per client id, after the
// EventMesh LoadMeter (../shared/seeds/eventmesh-load-balancing.txt:
// activeSessions; inflow/outflow byte counters bucketed per clientId). Pure:
// time comes in as milliseconds; not thread-safe (actors/session_probe.hpp
// wraps it for the client routes' threads).
//
// A session is one key with an expiry, renewed by every sighting:
//   - a producer or consumer: key "client:<id>", one per client id, renewed
//     by each produce or fetch carrying the id, alive `ttl_ms` after the last;
//   - a consumer-group member: key "member:<group>/<member>", renewed by its
//     join and heartbeats, ended by its leave, attributed to a client id when
//     the join or heartbeat carried one.
// Requests without a client id add bytes to the totals only.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "placement/load_report.hpp"

namespace moonmq::placement {

/// One client id's part of a sample.
struct client_interval {
  int64_t sessions = 0;     ///< live session keys attributed to it
  uint64_t bytes_in = 0;    ///< produce bytes during the interval
  uint64_t bytes_out = 0;   ///< fetch bytes during the interval
};

/// What happened since the previous sample.
struct activity_sample {
  int64_t interval_ms = 0;       ///< since the previous sample (or construction), ≥ 1
  int64_t active_sessions = 0;   ///< live session keys (all clients, anonymous members too)
  uint64_t bytes_in = 0;         ///< during the interval
  uint64_t bytes_out = 0;
  uint64_t bytes_in_total = 0;   ///< since construction (counters)
  uint64_t bytes_out_total = 0;
  std::map<std::string, client_interval> clients;  ///< every client id with a session or bytes

  /// Bytes/second over the interval.
  double in_per_sec() const { return static_cast<double>(bytes_in) * 1000.0 / static_cast<double>(interval_ms); }
  double out_per_sec() const { return static_cast<double>(bytes_out) * 1000.0 / static_cast<double>(interval_ms); }
};

class client_activity {
 public:
  /// Most live session keys kept; sightings of new keys beyond it count
  /// bytes in the totals only (bounds memory against random client ids;
  /// also keeps a report within max_report_clients rows).
  static constexpr size_t max_sessions = max_report_clients;

  explicit client_activity(int64_t now_ms = 0) : last_sample_ms_(now_ms) {}

  /// A produce of `bytes` request-body bytes by `client` ("" = anonymous).
  void produced(std::string_view client, uint64_t bytes, int64_t now_ms, int64_t ttl_ms);
  /// A fetch answer of `bytes` body bytes to `client` ("" = anonymous).
  void fetched(std::string_view client, uint64_t bytes, int64_t now_ms, int64_t ttl_ms);
  /// A group member's join or heartbeat; `client` may be "".
  void member_seen(std::string_view group, std::string_view member, std::string_view client, int64_t now_ms,
                   int64_t ttl_ms);
  /// A group member left: its session ends now.
  void member_left(std::string_view group, std::string_view member);

  /// Drops expired sessions (expiry ≤ now_ms), returns the interval since
  /// the previous sample and starts the next one.
  activity_sample sample(int64_t now_ms);

  /// Live session keys right now (before expiry at the next sample).
  size_t session_count() const { return sessions_.size(); }

 private:
  struct session {
    std::string client;  ///< "" = anonymous
    int64_t expires_ms = 0;
  };
  void touch(std::string key, std::string_view client, int64_t now_ms, int64_t ttl_ms);
  /// Produce (`in`) or fetch bytes of `client`, renewing its session.
  void count(std::string_view client, uint64_t bytes, bool in, int64_t now_ms, int64_t ttl_ms);

  std::map<std::string, session> sessions_;
  std::map<std::string, client_interval> interval_;  ///< bytes per client in this interval
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
  uint64_t in_total_ = 0, out_total_ = 0;
  int64_t last_sample_ms_ = 0;
};

/// Copies a sample into a report: sessions, rates, counters and per-client
/// rows (rates over the sample's interval). Leaves the other fields alone.
void fill_report(load_report& r, const activity_sample& s);

}  // namespace moonmq::placement
