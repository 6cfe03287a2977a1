#pragma once
// The recommend scorer behind GET /session/recommend (DESIGN §6): ranks the
// live brokers for one client session from their load reports. Pure and
// deterministic: reports, time and config in; ranking with reasons out.
//
// Approach after EventMesh's /session/recommend
// (../shared/seeds/eventmesh-load-balancing.txt, "The balancing loop"):
// score = activeSessions·w1 + byteRate·w2 + cpuLoad·w3, an overloaded
// instance (cpu > 0.8 or inflow > 5 MB/s) yields, a client with sessions is
// spread. Differences from the seed, each for a reason (docs/placement.md):
// the three terms are normalized before weighting (raw sessions, bytes/s and
// a 0..1 cpu fraction differ by six orders of magnitude); overload and
// spreading are strict ranking tiers instead of "+10000"; a topic adds a
// partition-ownership term; near-ties are broken per client by rendezvous
// hashing so that clients asking within one heartbeat do not all pile onto
// the same broker.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "placement/load_report.hpp"
#include "placement/load_tracker.hpp"

namespace moonmq::placement {

/// Which cpu figure of a report the scorer uses.
enum class cpu_source {
  process,  ///< this broker's process only (co-located brokers: tests, demos)
  machine,  ///< the whole machine
  higher,   ///< max(process, machine): a busy neighbour counts too (default)
};

/// Stable name ("process", "machine", "higher"); parse_cpu_source is its inverse.
const char* to_string(cpu_source s);
std::optional<cpu_source> parse_cpu_source(std::string_view s);

/// Scoring knobs. Defaults: weights 1/1/1 (equal say for each normalized
/// term), 0.5 for topic ownership (a forwarding hop costs less than load);
/// overload at cpu > 0.8 and inflow > 5 MiB/s and staleness after 3 missed
/// 5 s heartbeats, all from the EventMesh seed.
struct scorer_config {
  double session_weight = 1.0;    ///< w1, ≥ 0
  double byte_rate_weight = 1.0;  ///< w2, ≥ 0 (bytes in + out per second)
  double cpu_weight = 1.0;        ///< w3, ≥ 0
  double partition_weight = 0.5;  ///< w4, ≥ 0: weight of (1 − share of the topic's partitions owned)
  /// Normalization floors (> 0): a term is value / max(highest value among
  /// the ranked brokers, floor), so trivial loads (1 session vs 0, a few
  /// bytes/s) weigh little and all-zero loads divide by the floor, not 0.
  double session_floor = 10;
  double byte_rate_floor = 1024.0 * 1024.0;                 ///< 1 MiB/s
  double overload_cpu = 0.8;                                ///< cpu above this = overloaded, in (0, 1]
  double overload_inflow_bytes_per_sec = 5.0 * 1024 * 1024; ///< inflow above this = overloaded, > 0
  cpu_source cpu = cpu_source::higher;
  int64_t heartbeat_interval_ms = 5000;  ///< report period, > 0
  int64_t stale_after_heartbeats = 3;    ///< no new report for this many periods = stale, ≥ 1
  bool spread_clients = true;            ///< rank by the client's own sessions on each broker
  /// Scores within this distance of the best of their tier are near-ties,
  /// ordered per client by rendezvous hash; ≥ 0 (0: exact ties only).
  double tie_band = 0.05;
};

/// Checks ranges (finite numbers, as documented per field); the error names
/// the field ("byte_rate_floor: expected a finite number > 0").
status validate(const scorer_config& c);

/// One GET /session/recommend: `?clientId=` and the optional `&topic=`.
struct placement_request {
  std::string client_id;             ///< valid_client_id
  std::optional<std::string> topic;  ///< cluster::valid_topic when present
};

/// Why a broker is not ranked.
enum class exclusion_reason {
  dead,              ///< broker_load::alive is false (unreachable)
  draining,          ///< the report says draining
  stale,             ///< no new report within stale_after_heartbeats · heartbeat_interval_ms
  invalid_report,    ///< the report fails validate()
  duplicate_broker,  ///< a second entry for the same broker id (the freshest is kept)
};

/// Stable lower-case name ("dead", "stale", ...).
const char* to_string(exclusion_reason r);

struct exclusion {
  broker_id broker;
  exclusion_reason reason = exclusion_reason::dead;
  std::string detail;  ///< human-readable, with the numbers involved
};

/// The normalized terms of one broker's score, each in [0, 1] before weighting.
struct score_terms {
  double sessions = 0;    ///< active_sessions / session scale
  double byte_rate = 0;   ///< (in + out) / byte-rate scale; 1 when rates are not trusted
  double cpu = 0;         ///< the configured cpu figure, already a fraction
  double partitions = 0;  ///< 1 − owned/partitions of the topic; 0 without a topic
};

/// One ranked broker.
struct candidate {
  broker_id broker;
  double score = 0;                ///< w1·sessions + w2·byte_rate + w3·cpu + w4·partitions; lower is better; finite
  score_terms terms;
  bool overloaded = false;         ///< ranked after every non-overloaded broker
  bool rates_trusted = true;       ///< false after a counter reset (restart)
  int64_t client_sessions = 0;     ///< the requesting client's sessions here
  int64_t owned_partitions = 0;    ///< of the requested topic (0 without one)
  bool near_tie = false;           ///< ordered by client hash among near-ties
  std::vector<std::string> reasons;
};

enum class verdict { recommended, no_eligible_broker };

/// Stable name ("recommended", "no_eligible_broker": the 503 error code).
const char* to_string(verdict v);

struct recommendation {
  verdict outcome = verdict::no_eligible_broker;
  std::vector<candidate> ranked;    ///< best first; empty iff no_eligible_broker
  std::vector<exclusion> excluded;  ///< in input order
  double session_scale = 0;         ///< the divisor of the sessions term
  double byte_rate_scale = 0;       ///< the divisor of the byte-rate term
  int64_t topic_partitions = 0;     ///< partitions of the requested topic (owners given)

  /// The recommended broker, or nullptr when none is eligible.
  const candidate* best() const { return ranked.empty() ? nullptr : &ranked.front(); }
};

/// Ranks `brokers` for `req` at `now_ms` (the receiver's clock, as seen_ms).
/// `partition_owners` is the requested topic's owner per partition (index =
/// partition); empty = no topic or an unknown one (no ownership term).
/// Order: non-overloaded before overloaded; then (spread_clients) fewer of
/// the client's sessions first; then score; near-ties (tie_band) by
/// rendezvous hash of (client id, broker id); then broker id. Errors: an
/// invalid request ("clientId", "topic") or config (its field).
result<recommendation> recommend(const std::vector<broker_load>& brokers, int64_t now_ms, const placement_request& req,
                                 const scorer_config& config, const std::vector<broker_id>& partition_owners = {});

/// The recommendation for /admin/actors and the recommend answer's details:
/// `{"outcome","session_scale","byte_rate_scale","topic_partitions"?,
///   "ranked":[{"broker_id","score","overloaded","rates_trusted",
///              "client_sessions","owned_partitions","near_tie",
///              "terms":{"sessions","byte_rate","cpu","partitions"},"reasons":[...]}],
///   "excluded":[{"broker_id","reason","detail"}]}`. Every number is finite.
nlohmann::json to_json(const recommendation& r);

}  // namespace moonmq::placement
