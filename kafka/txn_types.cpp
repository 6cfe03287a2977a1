#include "kafka/txn_types.hpp"

#include "kafka/errors.hpp"
#include "kafka/schema.hpp"

namespace moonmq::kafka {
namespace {

// Fields are listed in wire order; `v < N ||`-style guards follow the
// schema's "versions" ranges.

template <class Io, class M>
bool io_add_partitions_to_txn_request(Io& f, int16_t, M& x) {
  auto index = [&](auto& p) { return f.i32(p); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, index); };
  return f.string(x.transactional_id) && f.i64(x.producer_id) && f.i16(x.producer_epoch) &&
         f.array(x.topics, topic);
}

template <class Io, class M>
bool io_add_partitions_to_txn_response(Io& f, int16_t, M& x) {
  auto partition = [&](auto& p) { return f.i32(p.partition_index) && f.i16(p.error_code); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.results, partition); };
  return f.i32(x.throttle_time_ms) && f.array(x.results, topic);
}

template <class Io, class M>
bool io_add_offsets_to_txn_request(Io& f, int16_t, M& x) {
  return f.string(x.transactional_id) && f.i64(x.producer_id) && f.i16(x.producer_epoch) &&
         f.string(x.group_id);
}

// AddOffsetsToTxn and EndTxn v0-1 answer the same two fields.
template <class Io, class M>
bool io_throttle_and_error(Io& f, M& x) {
  return f.i32(x.throttle_time_ms) && f.i16(x.error_code);
}

template <class Io, class M>
bool io_add_offsets_to_txn_response(Io& f, int16_t, M& x) {
  return io_throttle_and_error(f, x);
}

template <class Io, class M>
bool io_end_txn_request(Io& f, int16_t, M& x) {
  return f.string(x.transactional_id) && f.i64(x.producer_id) && f.i16(x.producer_epoch) &&
         f.boolean(x.committed);
}

template <class Io, class M>
bool io_end_txn_response(Io& f, int16_t, M& x) {
  return io_throttle_and_error(f, x);
}

template <class Io, class M>
bool io_txn_offset_commit_request(Io& f, int16_t v, M& x) {
  auto partition = [&](auto& p) {
    return f.i32(p.partition_index) && f.i64(p.committed_offset) &&
           (v < 2 || f.i32(p.committed_leader_epoch)) && f.nullable_string(p.committed_metadata);
  };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return f.string(x.transactional_id) && f.string(x.group_id) && f.i64(x.producer_id) &&
         f.i16(x.producer_epoch) && f.array(x.topics, topic);
}

template <class Io, class M>
bool io_txn_offset_commit_response(Io& f, int16_t, M& x) {
  auto partition = [&](auto& p) { return f.i32(p.partition_index) && f.i16(p.error_code); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return f.i32(x.throttle_time_ms) && f.array(x.topics, topic);
}

}  // namespace

int16_t producer_fenced_code(api_key key, int16_t version) {
  switch (key) {
    case api_key::init_producer_id:
      return version >= 4 ? error_code::producer_fenced : error_code::invalid_producer_epoch;
    case api_key::add_partitions_to_txn:
    case api_key::add_offsets_to_txn:
    case api_key::end_txn:
      return version >= 2 ? error_code::producer_fenced : error_code::invalid_producer_epoch;
    default:
      return error_code::invalid_producer_epoch;
  }
}

MOONMQ_KAFKA_CODEC(add_partitions_to_txn_request)
MOONMQ_KAFKA_CODEC(add_partitions_to_txn_response)
MOONMQ_KAFKA_CODEC(add_offsets_to_txn_request)
MOONMQ_KAFKA_CODEC(add_offsets_to_txn_response)
MOONMQ_KAFKA_CODEC(end_txn_request)
MOONMQ_KAFKA_CODEC(end_txn_response)
MOONMQ_KAFKA_CODEC(txn_offset_commit_request)
MOONMQ_KAFKA_CODEC(txn_offset_commit_response)

}  // namespace moonmq::kafka
