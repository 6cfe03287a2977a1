#pragma once
// One broker's session-load report (DESIGN §6): what its load_meter measured
// at one instant, as the cluster load report carries it to every peer, with
// strict JSON conversion. The metrics follow the EventMesh LoadMeter
// (../shared/seeds/eventmesh-load-balancing.txt: activeSessions,
// inflow/outflow bytes/s bucketed per client id, cpuLoad), plus the
// cumulative byte counters and process start time a receiver needs to tell a
// restart from a quiet broker.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "cluster/types.hpp"
#include "util/result.hpp"

namespace moonmq::placement {

using cluster::broker_id;

/// A validation failure: `field` is the key path ("clients[2].sessions"),
/// `message` what is wrong with it.
struct field_error {
  std::string field;
  std::string message;
};

/// "field: message", for logs and HTTP 400 bodies.
std::string to_string(const field_error& e);

/// A T or a field_error.
template <class T>
using result = util::basic_result<T, field_error>;
/// Success or a field_error.
using status = result<void>;

/// Longest client id (the `clientId` query parameter, a group member's client).
inline constexpr std::size_t max_client_id_length = 256;
/// Upper bound of any byte rate in a report (1e15 B/s, far above any NIC):
/// keeps sums of rates finite.
inline constexpr double max_byte_rate = 1e15;
/// Most client rows one report may carry.
inline constexpr std::size_t max_report_clients = 65536;

/// True when `id` is 1..256 bytes with no control character (< 0x20, 0x7f).
bool valid_client_id(std::string_view id);

/// One client id's share of a broker's load.
struct client_load {
  int64_t sessions = 0;           ///< this client's active sessions here, ≥ 0
  double bytes_in_per_sec = 0;    ///< produce bytes/s from this client
  double bytes_out_per_sec = 0;   ///< fetch bytes/s to this client
};

/// One broker's load at `report_time_ms`. Rates are bytes/second over the
/// meter's last interval; cpu figures are fractions of the whole machine in
/// [0, 1] (process: this broker's process; machine: every process).
struct load_report {
  broker_id broker;
  int64_t report_time_ms = 0;   ///< sample time, ms since the epoch (sender's clock)
  int64_t started_ms = 0;       ///< sender process start, ms since the epoch; 0 = unknown
  int64_t active_sessions = 0;  ///< every active client session (group members, recent producers/consumers)
  double bytes_in_per_sec = 0;
  double bytes_out_per_sec = 0;
  uint64_t bytes_in_total = 0;  ///< cumulative produce bytes since process start (counter)
  uint64_t bytes_out_total = 0; ///< cumulative fetch bytes since process start (counter)
  double process_cpu = 0;
  double machine_cpu = 0;
  bool draining = false;        ///< the broker is leaving: never recommend it
  std::map<std::string, client_load> clients;  ///< per client id

  /// bytes_in_per_sec + bytes_out_per_sec.
  double byte_rate() const { return bytes_in_per_sec + bytes_out_per_sec; }
};

/// Checks a report built in code (the local meter's) with the same rules as
/// report_from_json: valid broker id and client ids, times/counts ≥ 0, rates
/// finite in [0, max_byte_rate], cpu finite in [0, 1], client sessions
/// summing to at most active_sessions, at most max_report_clients rows.
status validate(const load_report& r);

/// The report as JSON:
/// `{"broker_id","report_time_ms","started_ms","active_sessions",
///   "bytes_in_per_sec","bytes_out_per_sec","bytes_in_total","bytes_out_total",
///   "process_cpu","machine_cpu","draining",
///   "clients":[{"client_id","sessions","bytes_in_per_sec","bytes_out_per_sec"}]}`
/// (clients sorted by id). Round-trips through report_from_json.
nlohmann::json to_json(const load_report& r);

/// Parses and validates one report. Every key above is required; unknown keys
/// are ignored (newer senders may add some). Errors name the key path, e.g.
/// `clients[1].client_id: duplicate "c7"` or `machine_cpu: expected a number
/// in [0, 1]`.
result<load_report> report_from_json(const nlohmann::json& j);

}  // namespace moonmq::placement
