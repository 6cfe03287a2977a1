#include "cluster/reassignment_request.hpp"

#include <limits>
#include <set>

#include "cluster/move_journal.hpp"

namespace moonmq::cluster {
namespace {

using json = nlohmann::json;

struct checked {
  std::optional<requested_move> move;
  std::string error;
  std::string message;
};

checked reject(std::string code, std::string message) {
  return checked{std::nullopt, std::move(code), std::move(message)};
}

/// Shape and static checks of one entry; fills `tp` and `to` when they parse.
/// The broker a Kafka node id names: Kafka's reassignment tool writes
/// replicas as numbers, and moonmq's Kafka listener numbers the brokers 1..N
/// in id order (docs/kafka.md).
std::optional<broker_id> broker_of_node_id(const cluster_view& view, int64_t node) {
  if (view.broker_of_node)
    return view.broker_of_node(node);
  if (node < 1 || node > static_cast<int64_t>(view.brokers.size()))
    return std::nullopt;
  auto it = view.brokers.begin();
  std::advance(it, node - 1);
  return it->first;
}

checked check_shape(const json& e, topic_partition& tp, broker_id& to, const cluster_view& view) {
  if (!e.is_object())
    return reject("invalid_entry", "an entry must be an object {\"topic\",\"partition\",\"replicas\"}");
  auto t = e.find("topic");
  auto p = e.find("partition");
  auto r = e.find("replicas");
  if (t == e.end() || !t->is_string())
    return reject("invalid_entry", "\"topic\" is missing or not a string");
  if (p == e.end() || !p->is_number_integer())
    return reject("invalid_entry", "\"partition\" is missing or not an integer");
  if (r == e.end() || !r->is_array())
    return reject("invalid_entry", "\"replicas\" is missing or not an array of broker ids");
  tp.topic = t->get<std::string>();
  if (!valid_topic(tp.topic))
    return reject("invalid_topic", "topic " + quote_input(tp.topic) +
                                       " is not a valid name ([A-Za-z0-9._-]{1,249}, without \"..\")");
  if (is_internal_topic(tp.topic))
    return reject("internal_topic", "topic " + tp.topic + " is internal (\"__\" prefix); internal topics never move");
  if (p->is_number_unsigned() ? p->get<uint64_t>() > uint64_t(std::numeric_limits<int32_t>::max())
                              : (p->get<int64_t>() < 0 || p->get<int64_t>() > std::numeric_limits<int32_t>::max()))
    return reject("invalid_partition", "partition " + p->dump() + " is out of range (0 .. 2^31-1)");
  tp.partition = static_cast<int32_t>(p->get<int64_t>());
  if (r->size() != 1)
    return reject("invalid_replicas", "\"replicas\" names " + std::to_string(r->size()) +
                                          " brokers; moonmq keeps exactly one copy of each partition (no "
                                          "replication), so it must name exactly one: the new owner");
  if ((*r)[0].is_number_integer()) {
    auto named = broker_of_node_id(view, (*r)[0].get<int64_t>());
    if (!named)
      return reject("unknown_broker",
                    "\"replicas\" names Kafka node id " + (*r)[0].dump() + ", which no broker has" +
                      (view.broker_of_node ? std::string(" (Kafka Metadata lists the node ids)")
                                           : "; the cluster's are 1.." + std::to_string(view.brokers.size()) +
                                               " (brokers in id order)"));
    to = *named;
    return {};
  }
  if (!(*r)[0].is_string())
    return reject("invalid_replicas", "\"replicas\" must hold a broker id string such as \"b2\" or a Kafka node "
                                      "id number, got " + (*r)[0].dump());
  to = broker_id{(*r)[0].get<std::string>()};
  return {};
}

}  // namespace

result<reassignment_outcome> parse_reassignment_request(std::string_view body, const cluster_view& view) {
  auto doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return make_error(errc::invalid_request, "body is not valid JSON");
  if (!doc.is_object())
    return make_error(errc::invalid_request, "body must be an object {\"version\":1,\"partitions\":[...]}");
  auto v = doc.find("version");
  if (v == doc.end() || !v->is_number_integer() || v->get<int64_t>() != 1)
    return make_error(errc::invalid_request, "\"version\" must be 1 (the only reassignment format supported), got " +
                                                 (v == doc.end() ? std::string{"nothing"} : v->dump()));
  std::string reason;
  if (auto r = doc.find("reason"); r != doc.end()) {
    if (!r->is_string() || !valid_move_reason(r->get<std::string>()))
      return make_error(errc::invalid_request, "\"reason\" must be a string of at most "
                                                   + std::to_string(max_move_reason_bytes)
                                                   + " bytes without control characters");
    reason = r->get<std::string>();
  }
  auto list = doc.find("partitions");
  if (list == doc.end() || !list->is_array())
    return make_error(errc::invalid_request, "\"partitions\" is missing or not an array");
  if (list->size() > max_reassignment_entries)
    return make_error(errc::invalid_request, "\"partitions\" has " + std::to_string(list->size()) +
                                                 " entries, at most " + std::to_string(max_reassignment_entries) +
                                                 " per request");

  // First pass: every (topic, partition) that appears more than once.
  std::map<topic_partition, size_t> seen;
  for (const auto& e : *list) {
    topic_partition tp;
    broker_id to;
    if (check_shape(e, tp, to, view).error.empty())
      ++seen[tp];
  }

  reassignment_outcome out;
  out.reason = std::move(reason);
  for (const auto& e : *list) {
    topic_partition tp;
    broker_id to;
    checked c = check_shape(e, tp, to, view);
    if (c.error.empty()) {
      auto known = view.brokers.find(to);
      std::optional<broker_id> owner;
      if (known == view.brokers.end()) {
        c = reject("unknown_broker", "broker " + quote_input(to.str()) + " is not a broker of this cluster");
      } else if (!known->second) {
        c = reject("broker_not_alive", "broker " + to.str() + " is not alive; a move needs a live destination");
      } else if (seen[tp] > 1) {
        c = reject("duplicate_partition", to_string(tp) + " appears " + std::to_string(seen[tp]) +
                                              " times in this request; name each partition once");
      } else if (!view.owner_of || !(owner = view.owner_of(tp))) {
        c = reject("unknown_partition", "partition " + to_string(tp) + " does not exist");
      } else if (view.moving && view.moving(tp)) {
        c = reject("move_in_progress", to_string(tp) + " is already moving; cancel it or wait for it to end");
      } else if (*owner == to) {
        c.move = requested_move{tp, *owner, to, true};
      } else if (auto src = view.brokers.find(*owner); src == view.brokers.end() || !src->second) {
        c = reject("source_not_alive", "the current owner " + owner->str() + " of " + to_string(tp) +
                                           " is not alive; it is the broker that runs the move");
      } else {
        c.move = requested_move{tp, *owner, to, false};
      }
    }
    if (c.move)
      out.accepted.push_back(*c.move);
    else
      out.rejected.push_back(rejected_entry{e, std::move(c.error), std::move(c.message)});
  }
  return out;
}

json to_json(const reassignment_outcome& outcome) {
  json accepted = json::array();
  for (const auto& m : outcome.accepted) {
    accepted.push_back({{"topic", m.tp.topic},
                        {"partition", m.tp.partition},
                        {"replicas", json::array({m.to.str()})},
                        {"from", m.from.str()},
                        {"to", m.to.str()},
                        {"state", m.noop ? "done" : "queued"}});
  }
  json rejected = json::array();
  for (const auto& r : outcome.rejected) {
    json entry = r.entry.is_object() ? r.entry : json{{"entry", r.entry}};
    entry["error"] = r.error;
    entry["message"] = r.message;
    rejected.push_back(std::move(entry));
  }
  return {{"accepted", std::move(accepted)}, {"rejected", std::move(rejected)}};
}

}  // namespace moonmq::cluster
