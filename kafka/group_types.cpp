#include "kafka/group_types.hpp"

#include "kafka/schema.hpp"

namespace moonmq::kafka {
namespace {

template <class Io, class M>
bool io_find_coordinator_request(Io& f, int16_t v, M& x) {
  return f.string(x.key_value) && (v < 1 || f.i8(x.key_type));
}

template <class Io, class M>
bool io_find_coordinator_response(Io& f, int16_t v, M& x) {
  return (v < 1 || f.i32(x.throttle_time_ms)) && f.i16(x.error_code) &&
         (v < 1 || f.nullable_string(x.error_message)) && f.i32(x.node_id) &&
         f.string(x.host) && f.i32(x.port);
}

template <class Io, class M>
bool io_join_group_request(Io& f, int16_t v, M& x) {
  auto protocol = [&](auto& p) { return f.string(p.name) && f.bytes(p.metadata); };
  return f.string(x.group_id) && f.i32(x.session_timeout_ms) &&
         (v < 1 || f.i32(x.rebalance_timeout_ms)) && f.string(x.member_id) &&
         (v < 5 || f.nullable_string(x.group_instance_id)) && f.string(x.protocol_type) &&
         f.array(x.protocols, protocol);
}

template <class Io, class M>
bool io_join_group_response(Io& f, int16_t v, M& x) {
  auto member = [&](auto& m) {
    return f.string(m.member_id) && (v < 5 || f.nullable_string(m.group_instance_id)) &&
           f.bytes(m.metadata);
  };
  return (v < 2 || f.i32(x.throttle_time_ms)) && f.i16(x.error_code) &&
         f.i32(x.generation_id) && f.string(x.protocol_name) && f.string(x.leader) &&
         f.string(x.member_id) && f.array(x.members, member);
}

template <class Io, class M>
bool io_sync_group_request(Io& f, int16_t v, M& x) {
  auto assignment = [&](auto& a) { return f.string(a.member_id) && f.bytes(a.assignment); };
  return f.string(x.group_id) && f.i32(x.generation_id) && f.string(x.member_id) &&
         (v < 3 || f.nullable_string(x.group_instance_id)) &&
         f.array(x.assignments, assignment);
}

template <class Io, class M>
bool io_sync_group_response(Io& f, int16_t v, M& x) {
  return (v < 1 || f.i32(x.throttle_time_ms)) && f.i16(x.error_code) && f.bytes(x.assignment);
}

template <class Io, class M>
bool io_heartbeat_request(Io& f, int16_t v, M& x) {
  return f.string(x.group_id) && f.i32(x.generation_id) && f.string(x.member_id) &&
         (v < 3 || f.nullable_string(x.group_instance_id));
}

// Heartbeat and LeaveGroup responses share one layout.
template <class Io, class M>
bool io_throttle_and_error(Io& f, int16_t v, M& x) {
  return (v < 1 || f.i32(x.throttle_time_ms)) && f.i16(x.error_code);
}

template <class Io, class M>
bool io_heartbeat_response(Io& f, int16_t v, M& x) {
  return io_throttle_and_error(f, v, x);
}

template <class Io, class M>
bool io_leave_group_request(Io& f, int16_t v, M& x) {
  auto member = [&](auto& m) { return f.string(m.member_id) && f.nullable_string(m.group_instance_id); };
  return f.string(x.group_id) && (v >= 3 ? f.array(x.members, member) : f.string(x.member_id));
}

template <class Io, class M>
bool io_leave_group_response(Io& f, int16_t v, M& x) {
  auto member = [&](auto& m) {
    return f.string(m.member_id) && f.nullable_string(m.group_instance_id) && f.i16(m.error_code);
  };
  return io_throttle_and_error(f, v, x) && (v < 3 || f.array(x.members, member));
}

template <class Io, class M>
bool io_offset_commit_request(Io& f, int16_t v, M& x) {
  auto partition = [&](auto& p) {
    return f.i32(p.partition_index) && f.i64(p.committed_offset) && (v < 6 || f.i32(p.committed_leader_epoch)) &&
           f.nullable_string(p.committed_metadata);
  };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return f.string(x.group_id) && f.i32(x.generation_id) && f.string(x.member_id) &&
         (v < 7 || f.nullable_string(x.group_instance_id)) && (v > 4 || f.i64(x.retention_time_ms)) &&
         f.array(x.topics, topic);
}

template <class Io, class M>
bool io_offset_commit_response(Io& f, int16_t v, M& x) {
  auto partition = [&](auto& p) { return f.i32(p.partition_index) && f.i16(p.error_code); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return (v < 3 || f.i32(x.throttle_time_ms)) && f.array(x.topics, topic);
}

template <class Io, class M>
bool io_offset_fetch_request(Io& f, int16_t v, M& x) {
  auto index = [&](auto& i) { return f.i32(i); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partition_indexes, index); };
  return f.string(x.group_id) &&
         (v >= 2 ? f.nullable_array(x.topics, topic)
                 : schema::optional_as_array(f, x.topics, false, topic));
}

template <class Io, class M>
bool io_offset_fetch_response(Io& f, int16_t v, M& x) {
  auto partition = [&](auto& p) {
    return f.i32(p.partition_index) && f.i64(p.committed_offset) &&
           f.nullable_string(p.metadata) && f.i16(p.error_code);
  };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return (v < 3 || f.i32(x.throttle_time_ms)) && f.array(x.topics, topic) &&
         (v < 2 || f.i16(x.error_code));
}

template <class Io, class M>
bool io_describe_groups_request(Io& f, int16_t v, M& x) {
  return f.array(x.groups, [&](auto& g) { return f.string(g); }) &&
         (v < 3 || f.boolean(x.include_authorized_operations));
}

template <class Io, class M>
bool io_describe_groups_response(Io& f, int16_t v, M& x) {
  auto member = [&](auto& m) {
    return f.string(m.member_id) && (v < 4 || f.nullable_string(m.group_instance_id)) && f.string(m.client_id) &&
           f.string(m.client_host) && f.bytes(m.member_metadata) && f.bytes(m.member_assignment);
  };
  auto group = [&](auto& g) {
    return f.i16(g.error_code) && f.string(g.group_id) && f.string(g.group_state) && f.string(g.protocol_type) &&
           f.string(g.protocol_data) && f.array(g.members, member) && (v < 3 || f.i32(g.authorized_operations));
  };
  return (v < 1 || f.i32(x.throttle_time_ms)) && f.array(x.groups, group);
}

template <class Io, class M>
bool io_list_groups_request(Io&, int16_t, M&) {
  return true;  // no fields before v4
}

template <class Io, class M>
bool io_list_groups_response(Io& f, int16_t v, M& x) {
  auto group = [&](auto& g) { return f.string(g.group_id) && f.string(g.protocol_type); };
  return (v < 1 || f.i32(x.throttle_time_ms)) && f.i16(x.error_code) && f.array(x.groups, group);
}

template <class Io, class M>
bool io_delete_groups_request(Io& f, int16_t, M& x) {
  return f.array(x.groups_names, [&](auto& g) { return f.string(g); });
}

template <class Io, class M>
bool io_delete_groups_response(Io& f, int16_t, M& x) {
  auto result = [&](auto& r) { return f.string(r.group_id) && f.i16(r.error_code); };
  return f.i32(x.throttle_time_ms) && f.array(x.results, result);
}

template <class Io, class M>
bool io_offset_delete_request(Io& f, int16_t, M& x) {
  auto partition = [&](auto& p) { return f.i32(p); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return f.string(x.group_id) && f.array(x.topics, topic);
}

template <class Io, class M>
bool io_offset_delete_response(Io& f, int16_t, M& x) {
  auto partition = [&](auto& p) { return f.i32(p.partition_index) && f.i16(p.error_code); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition); };
  return f.i16(x.error_code) && f.i32(x.throttle_time_ms) && f.array(x.topics, topic);
}

}  // namespace

MOONMQ_KAFKA_CODEC(offset_delete_request)
MOONMQ_KAFKA_CODEC(offset_delete_response)
MOONMQ_KAFKA_CODEC(find_coordinator_request)
MOONMQ_KAFKA_CODEC(find_coordinator_response)
MOONMQ_KAFKA_CODEC(join_group_request)
MOONMQ_KAFKA_CODEC(join_group_response)
MOONMQ_KAFKA_CODEC(sync_group_request)
MOONMQ_KAFKA_CODEC(sync_group_response)
MOONMQ_KAFKA_CODEC(heartbeat_request)
MOONMQ_KAFKA_CODEC(heartbeat_response)
MOONMQ_KAFKA_CODEC(leave_group_request)
MOONMQ_KAFKA_CODEC(leave_group_response)
MOONMQ_KAFKA_CODEC(offset_commit_request)
MOONMQ_KAFKA_CODEC(offset_commit_response)
MOONMQ_KAFKA_CODEC(offset_fetch_request)
MOONMQ_KAFKA_CODEC(offset_fetch_response)
MOONMQ_KAFKA_CODEC(describe_groups_request)
MOONMQ_KAFKA_CODEC(describe_groups_response)
MOONMQ_KAFKA_CODEC(list_groups_request)
MOONMQ_KAFKA_CODEC(list_groups_response)
MOONMQ_KAFKA_CODEC(delete_groups_request)
MOONMQ_KAFKA_CODEC(delete_groups_response)

}  // namespace moonmq::kafka
