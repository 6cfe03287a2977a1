#include "kafka/meta_types.hpp"

#include "kafka/schema.hpp"

namespace moonmq::kafka {
namespace {

// Fields are listed in wire order; `v >= N &&`-style guards follow the
// schema's "versions" ranges.

template <class Io, class M>
bool io_api_versions_request(Io& f, int16_t v, M& x) {
  if (v < 3)
    return true;  // v0-2: empty body
  return f.compact_string(x.client_software_name) &&
         f.compact_string(x.client_software_version) && f.tagged_fields();
}

template <class Io, class M>
bool io_api_versions_response(Io& f, int16_t v, M& x) {
  auto entry = [&](auto& e) {
    return f.i16(e.api) && f.i16(e.min_version) && f.i16(e.max_version) &&
           (v < 3 || f.tagged_fields());
  };
  if (!f.i16(x.error_code))
    return false;
  if (!(v >= 3 ? f.compact_array(x.api_keys, entry) : f.array(x.api_keys, entry)))
    return false;
  return (v < 1 || f.i32(x.throttle_time_ms)) && (v < 3 || f.tagged_fields());
}

template <class Io, class M>
bool io_metadata_request(Io& f, int16_t v, M& x) {
  auto name = [&](auto& s) { return f.string(s); };
  if (!(v >= 1 ? f.nullable_array(x.topics, name)
               : schema::optional_as_array(f, x.topics, true, name)))
    return false;
  return v < 4 || f.boolean(x.allow_auto_topic_creation);
}

template <class Io, class M>
bool io_metadata_response(Io& f, int16_t v, M& x) {
  auto node = [&](auto& n) { return f.i32(n); };
  auto broker = [&](auto& b) {
    return f.i32(b.node_id) && f.string(b.host) && f.i32(b.port) &&
           (v < 1 || f.nullable_string(b.rack));
  };
  auto partition = [&](auto& p) {
    return f.i16(p.error_code) && f.i32(p.partition_index) && f.i32(p.leader_id) &&
           f.array(p.replica_nodes, node) && f.array(p.isr_nodes, node);
  };
  auto topic = [&](auto& t) {
    return f.i16(t.error_code) && f.string(t.name) && (v < 1 || f.boolean(t.is_internal)) &&
           f.array(t.partitions, partition);
  };
  return (v < 3 || f.i32(x.throttle_time_ms)) && f.array(x.brokers, broker) &&
         (v < 2 || f.nullable_string(x.cluster_id)) && (v < 1 || f.i32(x.controller_id)) &&
         f.array(x.topics, topic);
}

template <class Io, class M>
bool io_create_topics_request(Io& f, int16_t v, M& x) {
  auto node = [&](auto& n) { return f.i32(n); };
  auto assignment = [&](auto& a) {
    return f.i32(a.partition_index) && f.array(a.broker_ids, node);
  };
  auto config = [&](auto& c) { return f.string(c.name) && f.nullable_string(c.value); };
  auto topic = [&](auto& t) {
    return f.string(t.name) && f.i32(t.num_partitions) && f.i16(t.replication_factor) &&
           f.array(t.assignments, assignment) && f.array(t.configs, config);
  };
  return f.array(x.topics, topic) && f.i32(x.timeout_ms) &&
         (v < 1 || f.boolean(x.validate_only));
}

template <class Io, class M>
bool io_create_topics_response(Io& f, int16_t v, M& x) {
  auto topic = [&](auto& t) {
    return f.string(t.name) && f.i16(t.error_code) &&
           (v < 1 || f.nullable_string(t.error_message));
  };
  return (v < 2 || f.i32(x.throttle_time_ms)) && f.array(x.topics, topic);
}

template <class Io, class M>
bool io_delete_topics_request(Io& f, int16_t, M& x) {
  auto name = [&](auto& s) { return f.string(s); };
  return f.array(x.topic_names, name) && f.i32(x.timeout_ms);
}

template <class Io, class M>
bool io_delete_topics_response(Io& f, int16_t v, M& x) {
  auto topic = [&](auto& t) { return f.string(t.name) && f.i16(t.error_code); };
  return (v < 1 || f.i32(x.throttle_time_ms)) && f.array(x.responses, topic);
}

template <class Io, class M>
bool io_init_producer_id_request(Io& f, int16_t, M& x) {
  return f.nullable_string(x.transactional_id) && f.i32(x.transaction_timeout_ms);
}

template <class Io, class M>
bool io_init_producer_id_response(Io& f, int16_t, M& x) {
  return f.i32(x.throttle_time_ms) && f.i16(x.error_code) && f.i64(x.producer_id) &&
         f.i16(x.producer_epoch);
}

}  // namespace

MOONMQ_KAFKA_CODEC(api_versions_request)
MOONMQ_KAFKA_CODEC(api_versions_response)
MOONMQ_KAFKA_CODEC(metadata_request)
MOONMQ_KAFKA_CODEC(metadata_response)
MOONMQ_KAFKA_CODEC(create_topics_request)
MOONMQ_KAFKA_CODEC(create_topics_response)
MOONMQ_KAFKA_CODEC(delete_topics_request)
MOONMQ_KAFKA_CODEC(delete_topics_response)
MOONMQ_KAFKA_CODEC(init_producer_id_request)
MOONMQ_KAFKA_CODEC(init_producer_id_response)

api_versions_response make_api_versions_response(int16_t error) {
  api_versions_response r;
  r.error_code = error;
  for (const auto& a : supported_apis())
    r.api_keys.push_back({static_cast<int16_t>(a.key), a.min_version, a.max_version});
  return r;
}

}  // namespace moonmq::kafka
