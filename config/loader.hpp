#pragma once
// Loading and validating node configuration (CONTRACT.md §2).
//
// Sources, later ones overriding earlier ones key by key:
//   1. built-in defaults (node_config.hpp),
//   2. the --config file (JSON with // and /* */ comments),
//   3. its environment overlay `<dir>/<stem>.<MOONMQ_ENVIRONMENT>.json`
//      (e.g. appsettings.Production.json next to appsettings.json), if present,
//   4. each `--set Dotted.Key=value` (value parsed as JSON when it parses,
//      otherwise taken as a string; the leading "Server." may be omitted).

#include <set>
#include <string>
#include <vector>

#include "config/node_config.hpp"

namespace moonmq::config {

struct load_result {
  node_config config;
  /// Fatal problems, each naming the key path (`Server.Admin.Port: ...`)
  /// or the file and line of a syntax error. Non-empty = exit code 2.
  std::vector<std::string> errors;
  /// Unknown keys and other non-fatal remarks.
  std::vector<std::string> warnings;
  /// Files actually read, in order.
  std::vector<std::string> files;
  /// The dotted path of every value the loader looked for, set or not
  /// ("Server.Cluster.Peers[0].Id", "Server.Autobalance.Goals.NW_IN.Enabled"):
  /// what docs/configuration.md must document (tests/config/docs_keys.test.cpp).
  std::set<std::string> keys_read;
  bool ok() const { return errors.empty(); }
};

/// Loads the configuration. `config_file` may be empty (defaults only);
/// `environment` is the value of MOONMQ_ENVIRONMENT (empty = no overlay);
/// `overrides` are the raw `Dotted.Key=value` strings of --set.
load_result load(const std::string& config_file, const std::string& environment,
                 const std::vector<std::string>& overrides);

/// Same, from JSON text already in memory (tests; `origin` names it in errors).
load_result load_text(const std::string& text, const std::string& origin,
                      const std::vector<std::string>& overrides = {});

/// The lease rules of shared-storage mode (docs/shared-storage.md "The
/// lease"), checked on a loaded configuration by that mode at start-up (not
/// by load(): in local mode the lease gates nothing, and the tests' small
/// SessionTimeoutMs stay valid). Errors, each naming the key path:
///  - no Cluster section: the lease comes from the Raft leader;
///  - SessionTimeoutMs < ElectionTimeoutMs + LeaseMs + LeaseMarginMs: the
///    controller must not fence and hand over a broker before its lease has
///    surely ended, even one a deposed leader renewed before check-quorum
///    stepped it down (within ElectionTimeoutMs);
///  - LeaseMarginMs < max(1, ceil(LeaseMs / 500)): no room for clock-rate
///    drift (2 * rho * LeaseMs, rho = 1e-3);
///  - LeaseMs <= HeartbeatMs: a healthy broker's lease would lapse between
///    two heartbeats.
/// Empty when the rules hold.
std::vector<std::string> check_shared_storage_lease(const node_config& cfg);

}  // namespace moonmq::config
