#pragma once
// What the Kafka listener tests on three Raft brokers share: the broker
// overrides, starting and waiting for a Raft leader, and running a kafkajs
// 2.2.4 admin client (scripts/install-deps.sh).

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/node/move_cluster.hpp"

namespace moonmq::test {

/// `--set` overrides of three Raft brokers with their Kafka listeners on,
/// plus `extra`.
std::vector<std::string> kafka_raft(std::vector<std::string> extra = {});

/// Starts the three brokers of `c` at once and waits until each is ready.
void start_three(move::move_cluster& c);

/// The broker index that leads Raft, once all three agree on one (within
/// 15 s; nullopt otherwise).
std::optional<size_t> raft_leader(move::move_cluster& c);

/// Runs a kafkajs admin client on `broker` (host:port) doing `calls` (JS
/// statements on `a`, connected; no double quotes): (exit code, output).
std::pair<int, std::string> kafkajs_admin(const std::string& broker, const std::string& calls);

/// The config object topic `topic` has in the durable topic catalogue of
/// the broker whose data dir is `data_dir` (`topics.json`); null when the
/// catalogue does not hold it.
nlohmann::json catalogue_config(const std::string& data_dir, const std::string& topic);

/// A group id ("kmeta-<n>") the group placement of brokers b1, b2 and b3
/// gives to broker `id`.
std::string group_coordinated_by(const std::string& id);

}  // namespace moonmq::test
