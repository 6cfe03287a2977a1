#include "api/kafka_handlers.hpp"

#include <algorithm>

#include "cluster/group_placement.hpp"

// The cluster as Kafka clients see it: node ids, the brokers offered,
// the controller and groups' coordinators (declared in kafka_handlers.hpp).

namespace moonmq::transport {
namespace {

/// Every broker of the cluster (sorted ids) — the node-id order.
std::vector<std::string> all_brokers(const kafka_context& ctx) {
  if (ctx.owners)
    if (auto members = ctx.owners->members(); !members.empty())
      return members;  // sorted
  std::vector<std::string> ids{ctx.broker_id};
  for (const auto& p : ctx.peers->all())
    ids.push_back(p.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool split_address(const std::string& address, std::string& host, int32_t& port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    return false;
  host = address.substr(0, colon);
  try {
    port = std::stoi(address.substr(colon + 1));
  } catch (...) {
    return false;
  }
  return true;
}

}  // namespace

int32_t kafka_node_id(const kafka_context& ctx, const std::string& broker) {
  if (ctx.owners)
    return ctx.owners->kafka_node_id(broker);
  auto ids = all_brokers(ctx);
  auto it = std::find(ids.begin(), ids.end(), broker);
  return it == ids.end() ? -1 : static_cast<int32_t>(it - ids.begin()) + 1;
}

int32_t kafka_controller_id(const kafka_context& ctx) {
  // The controller is the Raft leader when the metadata log runs (-1 while
  // none is known); a broker without Raft names itself.
  if (ctx.raft) {
    auto leader = ctx.raft->get().leader;
    return leader.empty() ? -1 : kafka_node_id(ctx, leader);
  }
  return kafka_node_id(ctx, ctx.broker_id);
}

std::vector<kafka::metadata_broker> kafka_brokers(const kafka_context& ctx, std::set<std::string>& listed) {
  std::vector<kafka::metadata_broker> out;
  // A broker that joins is listed (itself too) once its registration gave
  // it a node id.
  if (auto self = kafka_node_id(ctx, ctx.broker_id); self >= 0) {
    out.push_back({self, ctx.advertised_host, ctx.port.load(), std::nullopt});
    listed.insert(ctx.broker_id);
  }
  // A removed broker is no longer offered to clients (Kafka lists registered brokers only).
  auto standing = ctx.owners ? ctx.owners->standing() : std::make_shared<const broker_standing>();
  for (const auto& p : ctx.peers->all()) {
    kafka::metadata_broker b;
    b.node_id = kafka_node_id(ctx, p.id);
    if (standing->removed.count(p.id) || b.node_id < 0)
      continue;
    if (!p.kafka_address.empty() && split_address(p.kafka_address, b.host, b.port)) {
      out.push_back(std::move(b));
      listed.insert(p.id);
    }
  }
  return out;
}

std::string kafka_coordinator_of(const kafka_context& ctx, const std::string& group) {
  if (!ctx.owners)
    return ctx.broker_id;
  // Over the brokers the metadata log has not fenced: a dead broker's groups
  // re-form on another (their committed offsets stay with the partitions).
  auto brokers = all_brokers(ctx);
  return cluster::group_coordinator(group, ctx.owners ? ctx.owners->unfenced(std::move(brokers)) : brokers);
}

}  // namespace moonmq::transport
