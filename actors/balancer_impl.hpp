#pragma once
// Internal to the balance loop, included only by actors/balancer*.cpp: the
// actor's state and the functions one of those files calls in another.

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/balancer.hpp"
#include "actors/balancer_probe.hpp"
#include "goals/detector.hpp"
#include "goals/failover_planner.hpp"
#include "goals/load_model.hpp"
#include "goals/slow_brokers.hpp"
#include "plugins/goal_loader.hpp"
#include "util/logging.hpp"

namespace moonmq::balancer_detail {

using json = nlohmann::json;
using std::chrono::milliseconds;

/// How long a pass waits for a local actor (cluster state, reassigner).
constexpr milliseconds local_timeout{5000};

inline auto logger() { return log::get("balancer"); }

struct balancer_state {
  balancer_settings settings;
  balancer_probe probe;  ///< the loop's metrics
  std::shared_ptr<plugins::goal_registry> goals;
  cluster_state_actor cstate;
  reassigner_actor reassigner;
  goals::load_model model;
  /// Owner seen at the last pass per partition: a new owner re-primes its rates.
  std::map<goals::topic_partition, std::string> last_owner;
  /// Each broker's rack and weight from its latest load report (kept while
  /// it does not answer, so a dead broker keeps its rack; only `rack` and
  /// `weight` are used).
  std::map<std::string, goals::broker_spec> traits;
  int64_t epoch = 0;  ///< this loop's controller epoch (0 = not claimed yet)
  bool superseded = false;
  std::string superseded_by;
  int64_t last_claimed = 0;    ///< with Raft: the term of the last successful claim
  std::string not_controller;  ///< with Raft: why the last claim failed ("" = it succeeded)
  bool pass_running = false;
  uint64_t passes = 0;
  json last_pass;  ///< null before the first pass
  goals::slow_detector slow;  ///< which brokers are slow, pass by pass
  json last_slow = json::array();  ///< the last pass's slow-broker verdicts
  std::vector<caf::typed_response_promise<std::string>> plan_waiters;
  config::autobalance_config configured;  ///< the Autobalance section; settings.config adds the log's settings
  std::string applied_settings = "{}";   ///< the dynamic settings text last applied
  /// Failover owner entries proposed and not answered yet: not proposed again.
  std::set<goals::topic_partition> failover_pending;
  json last_failover;  ///< the last pass that proposed a failover (null before any)
  /// When the last failover pass started (util::monotonic_ms; 0 = never):
  /// a failover is looked for every failover_poll, but passes run at most
  /// every failover_retry (partitions no broker takes stay due).
  int64_t last_failover_start_ms = 0;
  static inline const char* name = "balancer";
};

using self_ptr = balancer_actor::stateful_pointer<balancer_state>;

// --- load reports (actors/balancer_reports.cpp; the metrics: actors/balancer_probe.hpp)

/// Counters of the partitions a loads body reports, by (reporter, partition).
void read_counters(const json& body,
                   std::map<std::pair<std::string, goals::topic_partition>, std::pair<uint64_t, uint64_t>>& out);

/// One pass of the slow-broker rule (goals/slow_brokers.hpp) over the
/// brokers that reported, in a cluster of the brokers in `alive` (alive or
/// not). A loop pass (`counted`) advances the rule and publishes its
/// verdicts; a preview runs it on a copy and changes nothing. Returns the
/// brokers held slow.
std::set<std::string> mark_slow_brokers(balancer_state& st, const json& in, const std::map<std::string, bool>& alive,
                                        bool counted);

/// A broker's rack and weight as its load report gives them (docs/balancer.md
/// "Racks and weights"); `b` keeps what it held when `body` is no report. A
/// weight outside the planner's bounds is replaced by 1 and reported in `errors`.
void read_traits(const json& body, const std::string& id, goals::broker_spec& b, json& errors);

// --- failover (actors/balancer_failover.cpp, docs/balancer.md "Failover (shared storage)")

/// The failover the applied image and this Raft leader's count of
/// silences call for now (goals::select_failover); nothing unless shared
/// storage is on and this broker is the leader. `term`: the Raft term the
/// silences were counted in.
goals::failover_selection failover_now(const balancer_state& st, int64_t* term = nullptr);

/// True when a fenced broker's partitions are due to fail over now.
bool failover_due(const balancer_state& st);

/// The failover part of a pass: plans `sel` on `model` with the hard goals
/// of `goal_list`, reports it in `pass` ("failover", and a FAILOVER row per
/// partition in "executed"), proposes it when `act` and the silences still
/// hold on this leader at `term`, and counts its partitions at their
/// destinations in `model` for the goals that run next.
void run_failover(self_ptr self, json& pass, goals::cluster_model& model,
                  const std::vector<const goals::goal*>& goal_list, const goals::failover_selection& sel,
                  int64_t term, bool act);

}  // namespace moonmq::balancer_detail
