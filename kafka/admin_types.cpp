#include "kafka/admin_types.hpp"

#include "kafka/schema.hpp"

namespace moonmq::kafka {
namespace {

// Fields in wire order; `v >= N` guards follow the schemas' "versions".

template <class Io, class M>
bool io_describe_configs_request(Io& f, int16_t v, M& x) {
  auto name = [&](auto& s) { return f.string(s); };
  auto resource = [&](auto& r) {
    return f.i8(r.resource_type) && f.string(r.resource_name) && f.nullable_array(r.configuration_keys, name);
  };
  return f.array(x.resources, resource) && (v < 1 || f.boolean(x.include_synonyms));
}

template <class Io, class M>
bool io_describe_configs_response(Io& f, int16_t v, M& x) {
  auto synonym = [&](auto& s) { return f.string(s.name) && f.nullable_string(s.value) && f.i8(s.source); };
  auto entry = [&](auto& c) {
    return f.string(c.name) && f.nullable_string(c.value) && f.boolean(c.read_only) &&
           (v >= 1 || f.boolean(c.is_default)) && (v < 1 || f.i8(c.config_source)) && f.boolean(c.is_sensitive) &&
           (v < 1 || f.array(c.synonyms, synonym));
  };
  auto result = [&](auto& r) {
    return f.i16(r.error_code) && f.nullable_string(r.error_message) && f.i8(r.resource_type) &&
           f.string(r.resource_name) && f.array(r.configs, entry);
  };
  return f.i32(x.throttle_time_ms) && f.array(x.results, result);
}

template <class Io, class M>
bool io_alter_configs_request(Io& f, int16_t, M& x) {
  auto config = [&](auto& c) { return f.string(c.name) && f.nullable_string(c.value); };
  auto resource = [&](auto& r) {
    return f.i8(r.resource_type) && f.string(r.resource_name) && f.array(r.configs, config);
  };
  return f.array(x.resources, resource) && f.boolean(x.validate_only);
}

template <class Io, class M>
bool io_alter_configs_response(Io& f, int16_t, M& x) {
  auto response = [&](auto& r) {
    return f.i16(r.error_code) && f.nullable_string(r.error_message) && f.i8(r.resource_type) &&
           f.string(r.resource_name);
  };
  return f.i32(x.throttle_time_ms) && f.array(x.responses, response);
}

template <class Io, class M>
bool io_create_partitions_request(Io& f, int16_t, M& x) {
  auto node = [&](auto& n) { return f.i32(n); };
  auto assignment = [&](auto& a) { return f.array(a, node); };
  auto topic = [&](auto& t) {
    return f.string(t.name) && f.i32(t.count) && f.nullable_array(t.assignments, assignment);
  };
  return f.array(x.topics, topic) && f.i32(x.timeout_ms) && f.boolean(x.validate_only);
}

template <class Io, class M>
bool io_create_partitions_response(Io& f, int16_t, M& x) {
  auto result = [&](auto& r) {
    return f.string(r.name) && f.i16(r.error_code) && f.nullable_string(r.error_message);
  };
  return f.i32(x.throttle_time_ms) && f.array(x.results, result);
}

// Flexible from v1: compact strings and arrays, a tag section per struct.
template <class Io, class M>
bool io_incremental_alter_configs_request(Io& io, int16_t v, M& x) {
  schema::flex<Io> f{io, v >= 1};
  auto config = [&](auto& c) {
    return f.string(c.name) && f.i8(c.config_operation) && f.nullable_string(c.value) && f.tags();
  };
  auto resource = [&](auto& r) {
    return f.i8(r.resource_type) && f.string(r.resource_name) && f.array(r.configs, config) && f.tags();
  };
  return f.array(x.resources, resource) && f.boolean(x.validate_only) && f.tags();
}

template <class Io, class M>
bool io_incremental_alter_configs_response(Io& io, int16_t v, M& x) {
  schema::flex<Io> f{io, v >= 1};
  auto response = [&](auto& r) {
    return f.i16(r.error_code) && f.nullable_string(r.error_message) && f.i8(r.resource_type) &&
           f.string(r.resource_name) && f.tags();
  };
  return f.i32(x.throttle_time_ms) && f.array(x.responses, response) && f.tags();
}

// Flexible in every version.
template <class Io, class M>
bool io_describe_cluster_request(Io& io, int16_t, M& x) {
  schema::flex<Io> f{io, true};
  return f.boolean(x.include_cluster_authorized_operations) && f.tags();
}

template <class Io, class M>
bool io_describe_cluster_response(Io& io, int16_t, M& x) {
  schema::flex<Io> f{io, true};
  auto broker = [&](auto& b) {
    return f.i32(b.broker_id) && f.string(b.host) && f.i32(b.port) && f.nullable_string(b.rack) && f.tags();
  };
  return f.i32(x.throttle_time_ms) && f.i16(x.error_code) && f.nullable_string(x.error_message) &&
         f.string(x.cluster_id) && f.i32(x.controller_id) && f.array(x.brokers, broker) &&
         f.i32(x.cluster_authorized_operations) && f.tags();
}

// Flexible from v2.
template <class Io, class M>
bool io_delete_records_request(Io& io, int16_t v, M& x) {
  schema::flex<Io> f{io, v >= 2};
  auto partition = [&](auto& p) { return f.i32(p.partition_index) && f.i64(p.offset) && f.tags(); };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition) && f.tags(); };
  return f.array(x.topics, topic) && f.i32(x.timeout_ms) && f.tags();
}

template <class Io, class M>
bool io_delete_records_response(Io& io, int16_t v, M& x) {
  schema::flex<Io> f{io, v >= 2};
  auto partition = [&](auto& p) {
    return f.i32(p.partition_index) && f.i64(p.low_watermark) && f.i16(p.error_code) && f.tags();
  };
  auto topic = [&](auto& t) { return f.string(t.name) && f.array(t.partitions, partition) && f.tags(); };
  return f.i32(x.throttle_time_ms) && f.array(x.topics, topic) && f.tags();
}

}  // namespace

MOONMQ_KAFKA_CODEC(describe_configs_request)
MOONMQ_KAFKA_CODEC(describe_configs_response)
MOONMQ_KAFKA_CODEC(alter_configs_request)
MOONMQ_KAFKA_CODEC(alter_configs_response)
MOONMQ_KAFKA_CODEC(create_partitions_request)
MOONMQ_KAFKA_CODEC(create_partitions_response)
MOONMQ_KAFKA_CODEC(incremental_alter_configs_request)
MOONMQ_KAFKA_CODEC(incremental_alter_configs_response)
MOONMQ_KAFKA_CODEC(describe_cluster_request)
MOONMQ_KAFKA_CODEC(describe_cluster_response)
MOONMQ_KAFKA_CODEC(delete_records_request)
MOONMQ_KAFKA_CODEC(delete_records_response)

}  // namespace moonmq::kafka
