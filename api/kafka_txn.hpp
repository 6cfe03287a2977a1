#pragma once
// The Kafka listener's transactional requests (KIP-98, docs/transactions.md):
// InitProducerId with a transactional id, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn (on the id's coordinator) and TxnOffsetCommit (on
// the group's coordinator), each decoded here, run by the transaction
// coordinator actor, and its answer mapped to Kafka error codes. Also the
// coordinator's effects over this listener's context: a marker written at
// the partition's owner (locally, or POST /cluster/txn/markers), and the
// offsets of a committed transaction stored as OffsetCommit stores them.

#include <memory>

#include <caf/fwd.hpp>

#include "actors/txn_coordinator.hpp"
#include "api/kafka_handlers.hpp"

namespace moonmq::transport {

/// Spawns the transaction coordinator of this broker with effects over
/// `ctx` (held weakly) and sets ctx->txns. Needs the metadata log.
/// `id_expiration`: Kafka.TransactionalIdExpirationMs.
txn_actor spawn_kafka_txn_coordinator(const std::shared_ptr<kafka_context>& ctx, raft_actor raft,
                                      registry_actor reg, std::chrono::milliseconds id_expiration);

/// Handles `req` when it is a transactional request and returns true; false
/// for any other request (left untouched).
bool handle_kafka_txn_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done& done);

/// The ApiVersions answer of this listener: every supported API, less the
/// transaction APIs when it has no transaction coordinator (no metadata
/// log), so that they are not offered where nothing answers them.
kafka::api_versions_response kafka_api_versions(const kafka_context& ctx);

/// The Kafka error code of a coordinator error, at the request's API and
/// version (47 or 90 for a fenced epoch: kafka::producer_fenced_code).
int16_t kafka_txn_code(cluster::txn_error e, kafka::api_key key, int16_t version);

}  // namespace moonmq::transport
