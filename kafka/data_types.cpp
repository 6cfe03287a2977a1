#include "kafka/data_types.hpp"

#include "kafka/schema.hpp"

namespace moonmq::kafka {
namespace {

template <class Io, class M>
bool io_produce_request(Io& f, int16_t, M& x) {
  auto partition = [&](auto& p) { return f.i32(p.index) && f.nullable_bytes(p.records); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return f.nullable_string(x.transactional_id) && f.i16(x.acks) && f.i32(x.timeout_ms) &&
         f.array(x.topics, topic);
}

template <class Io, class M>
bool io_produce_response(Io& f, int16_t v, M& x) {
  auto partition = [&](auto& p) {
    return f.i32(p.index) && f.i16(p.error_code) && f.i64(p.base_offset) &&
           f.i64(p.log_append_time_ms) && (v < 5 || f.i64(p.log_start_offset));
  };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return f.array(x.topics, topic) && f.i32(x.throttle_time_ms);
}

template <class Io, class M>
bool io_fetch_request(Io& f, int16_t v, M& x) {
  auto partition = [&](auto& p) {
    return f.i32(p.partition) && (v < 9 || f.i32(p.current_leader_epoch)) &&
           f.i64(p.fetch_offset) && (v < 5 || f.i64(p.log_start_offset)) &&
           f.i32(p.partition_max_bytes);
  };
  auto topic = [&](auto& t) { return f.string(t.topic) && f.array(t.partitions, partition); };
  auto index = [&](auto& i) { return f.i32(i); };
  auto forgotten = [&](auto& t) { return f.string(t.topic) && f.array(t.partitions, index); };
  return f.i32(x.replica_id) && f.i32(x.max_wait_ms) && f.i32(x.min_bytes) &&
         f.i32(x.max_bytes) && f.i8(x.isolation_level) &&
         (v < 7 || (f.i32(x.session_id) && f.i32(x.session_epoch))) &&
         f.array(x.topics, topic) && (v < 7 || f.array(x.forgotten, forgotten)) &&
         (v < 11 || f.string(x.rack_id));
}

template <class Io, class M>
bool io_fetch_response(Io& f, int16_t v, M& x) {
  auto aborted = [&](auto& a) { return f.i64(a.producer_id) && f.i64(a.first_offset); };
  auto partition = [&](auto& p) {
    return f.i32(p.partition) && f.i16(p.error_code) && f.i64(p.high_watermark) &&
           f.i64(p.last_stable_offset) && (v < 5 || f.i64(p.log_start_offset)) &&
           f.nullable_array(p.aborted_transactions, aborted) &&
           (v < 11 || f.i32(p.preferred_read_replica)) && f.nullable_bytes(p.records);
  };
  auto topic = [&](auto& t) { return f.string(t.topic) && f.array(t.partitions, partition); };
  return f.i32(x.throttle_time_ms) && (v < 7 || (f.i16(x.error_code) && f.i32(x.session_id))) &&
         f.array(x.topics, topic);
}

template <class Io, class M>
bool io_list_offsets_request(Io& f, int16_t v, M& x) {
  auto partition = [&](auto& p) { return f.i32(p.partition_index) && f.i64(p.timestamp); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return f.i32(x.replica_id) && (v < 2 || f.i8(x.isolation_level)) && f.array(x.topics, topic);
}

template <class Io, class M>
bool io_list_offsets_response(Io& f, int16_t v, M& x) {
  auto partition = [&](auto& p) {
    return f.i32(p.partition_index) && f.i16(p.error_code) && f.i64(p.timestamp) &&
           f.i64(p.offset);
  };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return (v < 2 || f.i32(x.throttle_time_ms)) && f.array(x.topics, topic);
}

}  // namespace

MOONMQ_KAFKA_CODEC(produce_request)
MOONMQ_KAFKA_CODEC(produce_response)
MOONMQ_KAFKA_CODEC(fetch_request)
MOONMQ_KAFKA_CODEC(fetch_response)
MOONMQ_KAFKA_CODEC(list_offsets_request)
MOONMQ_KAFKA_CODEC(list_offsets_response)

}  // namespace moonmq::kafka
