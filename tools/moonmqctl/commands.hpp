#pragma once
// moonmqctl subcommands. Each returns the process exit code: 0 success,
// 1 a request failed, 2 bad usage.

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "net/blocking_client.hpp"

namespace moonmq::ctl {

struct endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
};

struct produce_options {
  std::string topic;
  std::string key_separator;  ///< "" = no keys; else split each line at the first separator
  int partition = -1;         ///< -1 = by key / sticky
  int batch = 500;            ///< lines per request at most
  std::string acks = "leader";
  bool print_offsets = false;  ///< print "partition<TAB>offset<TAB>line" per acknowledged record
  std::string form = "binary";  ///< request bodies: binary (application/vnd.moonmq.records.v1) | json
  int in_flight = 1;  ///< requests sent before the oldest is answered (HTTP/1.1 pipelining, one connection)
};

struct consume_options {
  std::string topic;
  int partition = -1;       ///< -1 = every partition (without a group)
  int64_t offset = -1;      ///< start offset; -1 = log-start (or the committed offset with a group)
  std::string group;        ///< consumer group: committed offsets, assignment
  bool follow = false;      ///< keep polling at the log end
  int64_t count = -1;       ///< stop after this many records
  std::string format = "value";  ///< value | json | kv (key<TAB>value)
  int idle_exit_ms = 0;     ///< with --follow: exit after this long without records (0 = never)
  std::string form = "binary";  ///< fetch answers: binary (application/vnd.moonmq.records.v1) | json
};

int produce(const endpoint& ep, const produce_options& o);
int consume(const endpoint& ep, const consume_options& o);

/// The admin API (CONTRACT §4): `--admin-url`, `--token` (sent as
/// `Authorization: Bearer <token>` when non-empty; never printed).
struct admin_endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 9644;
  std::string token;
};

/// One admin request, answered within `timeout`. On a transport failure or
/// a 401/403 it prints why (never the token) and returns nullopt.
std::optional<transport::http_result> admin_call(const admin_endpoint& ep, const std::string& method,
                                                 const std::string& target, const std::string& body = {},
                                                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
/// `res` body as a JSON object, or prints why not and returns nullopt.
std::optional<nlohmann::json> body_json(const transport::http_result& res, const std::string& what);
/// Prints "<what> failed: <status> <body>".
void print_http_error(const std::string& what, const transport::http_result& res);
/// One admin request whose answer is a 2xx JSON object: that object, or
/// prints why not (transport failure, refused token, error status, body not
/// JSON) and returns nullopt.
std::optional<nlohmann::json> admin_request(const admin_endpoint& ep, const std::string& method,
                                            const std::string& target, const std::string& body = {});

/// `balancer show|status|dry-run|set` (/admin/balancer, docs/balancer.md).
struct balancer_options {
  std::vector<std::string> settings;  ///< set: Key=JSON-value pairs (e.g. DryRun=false, ExcludedTopics='["a"]')
  std::string format = "text";        ///< text | json (the API's answer)
};
/// `balancer show`: the effective settings, where they come from, the
/// controller and the pass count.
int balancer_show(const admin_endpoint& ep, const balancer_options& o);
/// `balancer status`: the loop's state and its last pass (GET
/// /admin/balancer): balancedness before and after, each goal's band and
/// the brokers outside it with the goal's explanation, the moves and what
/// became of them. Only the controller's loop runs passes.
int balancer_status(const admin_endpoint& ep, const balancer_options& o);
/// `balancer dry-run`: plans now without moving anything (POST
/// /admin/balancer/plan) and prints the plan as `status` prints a pass.
int balancer_dry_run(const admin_endpoint& ep, const balancer_options& o);
/// `balancer set`: one PATCH with every pair; exit 1 when refused.
int balancer_set(const admin_endpoint& ep, const balancer_options& o);

/// `cluster info`: the controller, every broker (address, alive, standing,
/// fenced, partitions owned) and the topic, partition and byte totals, from
/// GET /admin/cluster and GET /admin/brokers (the latter skipped on a
/// standalone broker). Exit 1 when a broker does not answer.
int cluster_info(const admin_endpoint& ep, const std::string& format);

/// `broker list|show|drain|undrain|remove` (/admin/brokers).
struct broker_options {
  std::string action;     ///< list | show | drain | undrain | remove
  std::string id;         ///< the broker (all but list)
  bool wait = false;      ///< drain: poll until the broker owns no partition
  int interval_ms = 1000; ///< drain --wait: poll period
  std::string format = "text";  ///< text | json (the API's answer)
};
/// Runs one broker action and prints the answer (the broker's row, or the
/// list); exit 1 when refused (e.g. 409 broker_not_empty).
int broker_command(const admin_endpoint& ep, const broker_options& o);

struct reassign_options {
  std::vector<std::string> topics;   ///< generate: topics to spread
  std::vector<std::string> brokers;  ///< generate: target broker ids
  std::string plan_file;             ///< execute: version-1 plan JSON
  std::string reason;                ///< execute: the plan's "reason" (replaces the file's; "" = keep it)
  bool wait = false;                 ///< execute / verify: poll until every move has ended
  int interval_ms = 1000;            ///< --wait: poll period
  std::string topic;                 ///< cancel
  int partition = -1;                ///< cancel
  std::string format = "text";       ///< text | json (the API's answers)
};

/// `reassign generate`: prints a version-1 plan spreading `topics` over `brokers`.
int reassign_generate(const admin_endpoint& ep, const reassign_options& o);
/// `reassign execute`: posts the plan; exit 1 when any entry is rejected or unknown (its
/// source never answered).
/// With `wait`, then follows the accepted moves as `verify --wait` does.
int reassign_execute(const admin_endpoint& ep, const reassign_options& o);
/// `reassign verify`: one line per partition's newest move (state, progress
/// bar, bytes, rate and ETA while copying), redrawn in place with `wait` on
/// a terminal; exit 1 when any failed.
int reassign_verify(const admin_endpoint& ep, const reassign_options& o);
/// `reassign cancel`: cancels the move of (topic, partition).
int reassign_cancel(const admin_endpoint& ep, const reassign_options& o);

/// `topic ...` and `group ...` over the client API (tools/moonmqctl/admin.cpp).
struct admin_options {
  std::string action;              ///< list, create, describe, alter-config, add-partitions, delete
  std::string name;                ///< the topic or group (all but list and delete)
  std::vector<std::string> names;  ///< delete: topics or groups
  int partitions = 0;              ///< create: 0 = the cluster default (num.partitions)
  int add = 0;                     ///< add-partitions: how many to add
  std::vector<std::string> set;    ///< create -c / alter-config --set: KEY=VALUE
  std::vector<std::string> remove; ///< alter-config --delete: KEY (back to its default)
  std::string format = "text";     ///< text | json
};
int topic_command(const endpoint& ep, const admin_options& o);
int group_command(const endpoint& ep, const admin_options& o);

/// Rows printed with every column as wide as its widest cell, two spaces apart.
struct table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  explicit table(std::vector<std::string> h) : header(std::move(h)) {}
  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  void print(std::ostream& out) const;
};

}  // namespace moonmq::ctl
