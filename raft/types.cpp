#include "raft/types.hpp"

#include <limits>

#include "raft/json_reader.hpp"
#include "util/names.hpp"

namespace moonmq::raft {

using nlohmann::json;

const char* to_string(errc code) {
  switch (code) {
    case errc::not_leader: return "not_leader";
    case errc::malformed: return "malformed";
    case errc::io_error: return "io_error";
    case errc::corrupt_state: return "corrupt_state";
    case errc::invalid_argument: return "invalid_argument";
  }
  return "unknown";
}

namespace {

bool allowed_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

bool all_allowed(const std::string& s) {
  for (char c : s)
    if (!allowed_char(c))
      return false;
  return true;
}

}  // namespace

bool valid_node_id(const std::string& id) { return util::valid_broker_name(id); }

bool valid_topic(const std::string& name) {
  return !name.empty() && name.size() <= 249 && all_allowed(name) && name.find("..") == std::string::npos;
}

namespace detail {

json_reader::json_reader(const json& j, std::string what) : j_(j), what_(std::move(what)) {
  if (!j_.is_object()) {
    ok_ = false;
    err_ = error{errc::malformed, what_ + ": expected a JSON object", {}, 0};
  }
}

void json_reader::fail(const std::string& f, const std::string& why) {
  if (!ok_)
    return;
  ok_ = false;
  err_ = error{errc::malformed, what_ + "." + f + ": " + why, {}, 0};
}

const json* json_reader::field(const char* key) {
  if (!ok_)
    return nullptr;
  auto it = j_.find(key);
  if (it == j_.end()) {
    fail(key, "missing");
    return nullptr;
  }
  return &*it;
}

uint64_t json_reader::u64(const char* key) {
  const json* v = field(key);
  if (!v)
    return 0;
  if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<int64_t>() < 0)) {
    fail(key, "expected an unsigned integer");
    return 0;
  }
  return v->get<uint64_t>();
}

int32_t json_reader::partition(const char* key) {
  const json* v = field(key);
  if (!v)
    return 0;
  bool negative = v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() < 0;
  if (!v->is_number_integer() || negative ||
      v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    fail(key, "expected an integer in [0, 2147483647]");
    return 0;
  }
  return static_cast<int32_t>(v->get<uint64_t>());
}

bool json_reader::boolean(const char* key) {
  const json* v = field(key);
  if (!v)
    return false;
  if (!v->is_boolean()) {
    fail(key, "expected a boolean");
    return false;
  }
  return v->get<bool>();
}

std::string json_reader::string(const char* key) {
  const json* v = field(key);
  if (!v)
    return {};
  if (!v->is_string()) {
    fail(key, "expected a string");
    return {};
  }
  return v->get<std::string>();
}

node_id json_reader::node(const char* key, bool allow_empty) {
  std::string s = string(key);
  if (!ok_)
    return {};
  if (s.empty() && allow_empty)
    return {};
  if (!valid_node_id(s)) {
    fail(key, "invalid broker id");
    return {};
  }
  return node_id{std::move(s)};
}

std::string json_reader::topic(const char* key) {
  std::string s = string(key);
  if (ok_ && !valid_topic(s)) {
    fail(key, "invalid topic name");
    return {};
  }
  return s;
}

const json* json_reader::array(const char* key) {
  const json* v = field(key);
  if (v && !v->is_array()) {
    fail(key, "expected an array");
    return nullptr;
  }
  return v;
}

const json* json_reader::object(const char* key) {
  const json* v = field(key);
  if (v && !v->is_object()) {
    fail(key, "expected an object");
    return nullptr;
  }
  return v;
}

}  // namespace detail

json to_json(const entry_payload& p) {
  json j;
  if (auto* c = std::get_if<controller_entry>(&p)) {
    j["type"] = "controller";
    j["leader"] = c->leader.str();
  } else if (auto* o = std::get_if<owner_entry>(&p)) {
    j["type"] = "owner";
    j["topic"] = o->topic;
    j["partition"] = o->partition;
    j["owner"] = o->owner.str();
    if (o->expect_epoch != 0)
      j["expect_epoch"] = o->expect_epoch;
    if (o->expect_owner_fenced)
      j["expect_owner_fenced"] = true;
  } else if (auto* cfg = std::get_if<config_entry>(&p)) {
    j["type"] = "config";
    j["balancer"] = cfg->balancer;
  } else if (auto* m = std::get_if<move_entry>(&p)) {
    j["type"] = "move";
    j["id"] = m->id;
    j["topic"] = m->topic;
    j["partition"] = m->partition;
    j["from"] = m->from.str();
    j["to"] = m->to.str();
    j["state"] = m->state;
    j["expect"] = m->expect;
    j["error"] = m->error;
    if (m->end >= 0)
      j["end"] = m->end;
    if (m->log_start >= 0)
      j["log_start"] = m->log_start;
    if (m->expect_epoch != 0)
      j["expect_epoch"] = m->expect_epoch;
  } else if (auto* b = std::get_if<broker_entry>(&p)) {
    j["type"] = "broker";
    j["id"] = b->id.str();
    j["change"] = to_string(b->change);
    if (b->change == broker_change::fence || b->change == broker_change::unfence)
      j["fenced"] = b->change == broker_change::fence;
    if (b->change == broker_change::register_broker) {
      j["cluster"] = b->endpoints.cluster;
      j["client"] = b->endpoints.client;
      j["kafka"] = b->endpoints.kafka;
      if (b->assign_node_id)
        j["assign_node_id"] = true;
    }
  } else if (auto* x = std::get_if<txn_entry>(&p)) {
    j["type"] = "txn";
    j["transactional_id"] = x->transactional_id;
    j["expect_version"] = x->expect_version;
    if (x->remove)
      j["remove"] = true;
    detail::write_txn_record(j, x->record);
  } else {
    const auto& t = std::get<topic_entry>(p);
    j["type"] = "topic";
    j["topic"] = t.topic;
    j["partitions"] = t.partitions;
    j["owner"] = t.owner.str();
    j["config"] = t.config;
    j["grow"] = t.grow;
    if (t.remove)
      j["delete"] = true;
    if (t.alter)
      j["alter"] = true;
    if (t.merge)
      j["merge"] = true;
    if (!t.owners.empty()) {
      auto& owners = j["owners"] = json::array();
      for (const auto& named : t.owners)
        owners.push_back(named.str());
      j["first"] = t.first;
      auto& checked = j["checked"] = json::array();
      for (const auto& known : t.checked)
        checked.push_back(known.str());
    }
  }
  return j;
}

json to_json(const log_entry& e) {
  json j = to_json(e.payload);
  j["term"] = e.entry_term.value;
  j["index"] = e.index.value;
  return j;
}

namespace {

/// The endpoints of a register entry or a snapshot row: "cluster" required
/// and non-empty, "client" and "kafka" optional ("" = not served).
broker_endpoints read_endpoints(detail::json_reader& r) {
  broker_endpoints e;
  e.cluster = r.string("cluster");
  if (r.ok() && e.cluster.empty())
    r.fail("cluster", "expected the broker's cluster listener host:port");
  if (r.ok() && r.has("client"))
    e.client = r.string("client");
  if (r.ok() && r.has("kafka"))
    e.kafka = r.string("kafka");
  return e;
}

/// An array of broker ids (`key`), each valid and non-empty.
std::vector<node_id> read_nodes(detail::json_reader& r, const char* key) {
  std::vector<node_id> ids;
  if (const json* a = r.array(key))
    for (const auto& x : *a) {
      if (!x.is_string() || !valid_node_id(x.get<std::string>())) {
        r.fail(key, "expected an array of broker ids");
        break;
      }
      ids.emplace_back(x.get<std::string>());
    }
  return ids;
}

/// Reads the payload fields of `j` (by "type") into `out`.
void read_payload(detail::json_reader& r, entry_payload& out) {
  std::string type = r.string("type");
  if (!r.ok())
    return;
  if (type == "controller") {
    out = controller_entry{r.node("leader", false)};
  } else if (type == "owner") {
    owner_entry o;
    o.topic = r.topic("topic");
    o.partition = r.partition("partition");
    o.owner = r.node("owner", false);
    if (r.ok() && r.has("expect_epoch"))
      o.expect_epoch = r.u64("expect_epoch");
    if (r.ok() && r.has("expect_owner_fenced"))
      o.expect_owner_fenced = r.boolean("expect_owner_fenced");
    out = std::move(o);
  } else if (type == "topic") {
    topic_entry t;
    t.topic = r.topic("topic");
    t.partitions = r.partition("partitions");
    t.owner = r.node("owner", false);
    t.config = r.string("config");
    t.grow = r.boolean("grow");
    if (r.ok() && r.has("delete"))
      t.remove = r.boolean("delete");
    if (r.ok() && r.has("alter"))
      t.alter = r.boolean("alter");
    if (r.ok() && r.has("merge"))
      t.merge = r.boolean("merge");
    if (r.ok() && (t.grow + t.remove + t.alter) > 1)
      r.fail(t.alter ? "alter" : "delete", "a topic entry either grows, deletes or reconfigures a topic");
    if (r.ok() && t.merge && !t.alter)
      r.fail("merge", "only a config change (\"alter\":true) merges");
    if (r.ok() && (t.partitions < 1 || t.partitions > max_topic_partitions))
      r.fail("partitions", "expected an integer in [1, " + std::to_string(max_topic_partitions) + "]");
    if (r.ok() && r.has("owners")) {  // absent in entries of earlier versions
      t.owners = read_nodes(r, "owners");
      t.first = r.partition("first");
      t.checked = read_nodes(r, "checked");
      if (r.ok() && (t.remove || t.alter))
        r.fail("owners", "only a create or a growth places partitions");
      if (r.ok() && (t.owners.empty() || static_cast<int64_t>(t.first) + static_cast<int64_t>(t.owners.size())
                                            > static_cast<int64_t>(t.partitions)))
        r.fail("owners", "expected 1.." + std::to_string(t.partitions) + " owners of partitions from \"first\" on");
    }
    out = std::move(t);
  } else if (type == "config") {
    config_entry c;
    c.balancer = r.string("balancer");
    if (r.ok()) {
      auto parsed = json::parse(c.balancer, nullptr, false);
      if (!parsed.is_object())
        r.fail("balancer", "expected a JSON object text");
    }
    out = std::move(c);
  } else if (type == "broker") {
    broker_entry b;
    b.id = r.node("id", false);
    if (r.has("change")) {
      auto name = r.string("change");
      auto c = broker_change_from(name);
      if (r.ok() && !c)
        r.fail("change", "expected \"fence\", \"unfence\", \"drain\", \"undrain\", \"remove\" or \"register\"");
      b.change = c.value_or(broker_change::fence);
      if (r.ok() && b.change == broker_change::register_broker) {
        b.endpoints = read_endpoints(r);
        if (r.ok() && r.has("assign_node_id"))
          b.assign_node_id = r.boolean("assign_node_id");
      }
    } else {
      b.change = r.boolean("fenced") ? broker_change::fence : broker_change::unfence;
    }
    out = std::move(b);
  } else if (type == "move") {
    move_entry m;
    m.id = r.string("id");
    if (r.ok() && !valid_move_id(m.id))
      r.fail("id", "expected 1..128 characters of [A-Za-z0-9._-]");
    m.topic = r.topic("topic");
    m.partition = r.partition("partition");
    m.from = r.node("from", false);
    m.to = r.node("to", false);
    m.state = r.string("state");
    if (r.ok() && !valid_move_state(m.state))
      r.fail("state", "expected a move state (queued, copying, cutover, offsets, rolling_back, done, failed, cancelled)");
    if (const json* expect = r.array("expect"))
      for (const auto& x : *expect) {
        if (!x.is_string() || !valid_move_state(x.get<std::string>())) {
          r.fail("expect", "expected an array of move states");
          break;
        }
        m.expect.push_back(x.get<std::string>());
      }
    m.error = r.string("error");
    if (r.ok() && r.has("end")) {
      auto end = r.u64("end");
      if (r.ok() && end > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        r.fail("end", "expected an offset");
      m.end = static_cast<int64_t>(end);
    }
    if (r.ok() && r.has("log_start")) {  // absent in entries of earlier versions
      auto start = r.u64("log_start");
      if (r.ok() && start > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        r.fail("log_start", "expected an offset");
      m.log_start = static_cast<int64_t>(start);
    }
    if (r.ok() && r.has("expect_epoch"))
      m.expect_epoch = r.u64("expect_epoch");
    if (r.ok() && m.from == m.to)
      r.fail("to", "a move's destination differs from its source");
    out = std::move(m);
  } else if (type == "txn") {
    txn_entry x;
    x.transactional_id = r.string("transactional_id");
    if (r.ok() && !detail::valid_transactional_id(x.transactional_id))
      r.fail("transactional_id", "expected 1.." + std::to_string(cluster::max_transactional_id_bytes) + " bytes");
    x.expect_version = r.u64("expect_version");
    if (r.ok() && r.has("remove"))
      x.remove = r.boolean("remove");
    x.record = detail::read_txn_record(r);
    out = std::move(x);
  } else {
    r.fail("type", "expected \"controller\", \"owner\", \"topic\", \"config\", \"broker\", \"move\" or \"txn\"");
  }
}

}  // namespace

result<entry_payload> payload_from_json(const json& j) {
  detail::json_reader r(j, "payload");
  entry_payload p;
  read_payload(r, p);
  if (!r.ok())
    return r.err();
  return p;
}

result<log_entry> entry_from_json(const json& j) {
  detail::json_reader r(j, "entry");
  log_entry e;
  e.entry_term = term{r.u64("term")};
  e.index = log_index{r.u64("index")};
  if (r.ok() && e.index == log_index{0})
    r.fail("index", "must be >= 1");
  if (r.ok() && e.entry_term == term{0})
    r.fail("term", "must be >= 1");
  read_payload(r, e.payload);
  if (!r.ok())
    return r.err();
  return e;
}

json to_json(const hard_state& h) {
  return json{{"term", h.current_term.value}, {"vote", h.voted_for.str()}, {"commit", h.commit.value}};
}

result<hard_state> hard_state_from_json(const json& j) {
  detail::json_reader r(j, "hard_state");
  hard_state h;
  h.current_term = term{r.u64("term")};
  h.voted_for = r.node("vote", true);
  h.commit = log_index{r.u64("commit")};
  if (!r.ok())
    return r.err();
  return h;
}

json to_json(const snapshot& s) {
  // Owners per topic, as indexes into "brokers" (-1 = no row): one small
  // integer per partition parses an order of magnitude faster than an
  // object per partition. Rows no topic covers stay in "owners".
  std::map<node_id, int> index_of;
  json brokers = json::array();
  for (const auto& [tp, owner] : s.owners)
    if (index_of.emplace(owner, static_cast<int>(index_of.size())).second)
      brokers.push_back(owner.str());
  json owners = json::array();
  std::map<std::string, std::vector<int>> per_topic;
  for (const auto& [name, t] : s.topics)
    per_topic[name].assign(static_cast<size_t>(t.partitions), -1);
  for (const auto& [tp, owner] : s.owners) {
    auto it = per_topic.find(tp.topic);
    if (it != per_topic.end() && static_cast<size_t>(tp.partition) < it->second.size())
      it->second[static_cast<size_t>(tp.partition)] = index_of[owner];
    else
      owners.push_back(json{{"topic", tp.topic}, {"partition", tp.partition}, {"owner", owner.str()}});
  }
  auto ids = [](const std::set<node_id>& set) {
    json out = json::array();
    for (const auto& id : set)
      out.push_back(id.str());
    return out;
  };
  json epochs = json::array();
  for (const auto& [tp, epoch] : s.epochs)
    epochs.push_back(json{{"topic", tp.topic}, {"partition", tp.partition}, {"epoch", epoch}});
  json registered = json::array();
  for (const auto& [id, e] : s.registered) {
    json row{{"id", id.str()}, {"cluster", e.cluster}, {"client", e.client}, {"kafka", e.kafka}};
    if (auto n = s.kafka_node_ids.find(id); n != s.kafka_node_ids.end())
      row["kafka_node_id"] = n->second;
    registered.push_back(std::move(row));
  }
  json moves = json::array();
  for (const auto& [id, m] : s.moves)
    moves.push_back(json{{"id", id},           {"topic", m.topic},   {"partition", m.partition},
                         {"from", m.from.str()}, {"to", m.to.str()}, {"state", m.state},
                         {"error", m.error},   {"end", m.end},       {"log_start", m.log_start},
                         {"epoch", m.epoch},   {"updated_at", m.updated_at.value}});
  json deleted = json::array();
  for (const auto& [name, at] : s.deleted_topics)
    deleted.push_back(json{{"topic", name}, {"deleted_at", at.value}});
  json topics = json::array();
  for (const auto& [name, t] : s.topics)
    topics.push_back(json{{"topic", name},
                          {"partitions", t.partitions},
                          {"config", t.config},
                          {"created_at", t.created_at.value},
                          {"owners", per_topic[name]}});
  return json{{"last_index", s.last_index.value},
              {"last_term", s.last_term.value},
              {"controller", s.controller.str()},
              {"brokers", std::move(brokers)},
              {"owners", std::move(owners)},
              {"topics", std::move(topics)},
              {"balancer", s.balancer},
              {"fenced", ids(s.fenced)},
              {"draining", ids(s.draining)},
              {"removed", ids(s.removed)},
              {"registered", std::move(registered)},
              {"epochs", std::move(epochs)},
              {"moves", std::move(moves)},
              {"deleted_topics", std::move(deleted)},
              {"transactions", detail::txn_rows(s.transactions)}};
}

result<snapshot> snapshot_from_json(const json& j) {
  detail::json_reader r(j, "snapshot");
  snapshot s;
  s.last_index = log_index{r.u64("last_index")};
  s.last_term = term{r.u64("last_term")};
  s.controller = r.node("controller", true);
  const json* owners = r.array("owners");
  if (owners) {
    for (const auto& o : *owners) {
      detail::json_reader ro(o, "snapshot.owners[]");
      topic_partition tp{ro.topic("topic"), ro.partition("partition")};
      node_id owner = ro.node("owner", false);
      if (!ro.ok())
        return ro.err();
      if (!s.owners.emplace(std::move(tp), std::move(owner)).second)
        return error{errc::malformed, "snapshot.owners: duplicate topic-partition", {}, 0};
    }
  }
  // The owner table of the per-topic arrays (absent in older snapshots,
  // whose topics carry no "owners").
  std::vector<node_id> brokers;
  if (r.ok() && j.contains("brokers")) {
    if (const json* list = r.array("brokers"))
      for (const auto& id : *list) {
        if (!id.is_string() || !valid_node_id(id.get_ref<const std::string&>()))
          return error{errc::malformed, "snapshot.brokers: expected broker ids", {}, 0};
        brokers.emplace_back(id.get<std::string>());
      }
  }
  if (r.ok() && j.contains("topics")) {
    const json* topics = r.array("topics");
    if (topics) {
      for (const auto& t : *topics) {
        detail::json_reader rt(t, "snapshot.topics[]");
        std::string name = rt.topic("topic");
        topic_record rec;
        rec.partitions = rt.partition("partitions");
        rec.config = rt.string("config");
        rec.created_at = log_index{rt.u64("created_at")};
        if (rt.ok() && (rec.partitions < 1 || rec.partitions > max_topic_partitions))
          rt.fail("partitions", "expected an integer in [1, " + std::to_string(max_topic_partitions) + "]");
        if (!rt.ok())
          return rt.err();
        if (auto o = t.find("owners"); o != t.end()) {
          if (!o->is_array() || o->size() != static_cast<size_t>(rec.partitions))
            return error{errc::malformed, "snapshot.topics[].owners: expected one broker index per partition", {}, 0};
          int32_t p = 0;
          for (const auto& v : *o) {
            // An unsigned JSON number is read as such: a huge one must not wrap to -1.
            int64_t i = -2;  // invalid
            if (v.is_number_unsigned())
              i = v.get<uint64_t>() < brokers.size() ? static_cast<int64_t>(v.get<uint64_t>()) : -2;
            else if (v.is_number_integer())
              i = v.get<int64_t>() >= -1 && v.get<int64_t>() < static_cast<int64_t>(brokers.size()) ? v.get<int64_t>()
                                                                                                  : -2;
            if (i == -2)
              return error{errc::malformed, "snapshot.topics[].owners: expected -1 or an index into brokers", {}, 0};
            if (i >= 0 &&
                !s.owners.emplace(topic_partition{name, p}, brokers[static_cast<size_t>(i)]).second)
              return error{errc::malformed, "snapshot.owners: duplicate topic-partition", {}, 0};
            ++p;
          }
        }
        if (!s.topics.emplace(std::move(name), std::move(rec)).second)
          return error{errc::malformed, "snapshot.topics: duplicate topic", {}, 0};
      }
    }
  }
  // Optional broker sets (absent in snapshots written before them: none).
  for (auto [key, set] : {std::pair{"fenced", &s.fenced}, std::pair{"draining", &s.draining},
                          std::pair{"removed", &s.removed}}) {
    if (!r.ok() || !j.contains(key))
      continue;
    if (const json* list = r.array(key))
      for (const auto& id : *list) {
        if (!id.is_string() || !valid_node_id(id.get<std::string>()))
          return error{errc::malformed, std::string("snapshot.") + key + ": expected broker ids", {}, 0};
        set->insert(node_id{id.get<std::string>()});
      }
  }
  if (r.ok() && j.contains("epochs")) {
    if (const json* list = r.array("epochs"))
      for (const auto& row : *list) {
        detail::json_reader re(row, "snapshot.epochs[]");
        topic_partition tp{re.topic("topic"), re.partition("partition")};
        auto epoch = re.u64("epoch");
        if (re.ok() && epoch < 2)
          re.fail("epoch", "expected an epoch above 1 (1 is implied)");
        if (!re.ok())
          return re.err();
        if (!s.owners.count(tp))
          return error{errc::malformed, "snapshot.epochs: an epoch for a partition without owner", {}, 0};
        if (!s.epochs.emplace(std::move(tp), epoch).second)
          return error{errc::malformed, "snapshot.epochs: duplicate topic-partition", {}, 0};
      }
  }
  if (r.ok() && j.contains("registered")) {
    if (const json* list = r.array("registered"))
      for (const auto& row : *list) {
        detail::json_reader rr(row, "snapshot.registered[]");
        node_id id = rr.node("id", false);
        auto e = read_endpoints(rr);
        if (rr.ok() && row.is_object() && row.contains("kafka_node_id")) {
          auto n = rr.u64("kafka_node_id");
          if (rr.ok() && (n < static_cast<uint64_t>(first_joined_kafka_node_id) || n > 0x7fffffffULL))
            rr.fail("kafka_node_id", "expected a node id from " + std::to_string(first_joined_kafka_node_id));
          for (const auto& [other, m] : s.kafka_node_ids)
            if (rr.ok() && m == static_cast<int32_t>(n))
              rr.fail("kafka_node_id", "node id " + std::to_string(n) + " is also broker " + other.str() + "'s");
          if (rr.ok())
            s.kafka_node_ids[id] = static_cast<int32_t>(n);
        }
        if (!rr.ok())
          return rr.err();
        if (!s.registered.emplace(std::move(id), std::move(e)).second)
          return error{errc::malformed, "snapshot.registered: duplicate broker", {}, 0};
      }
  }
  if (r.ok() && j.contains("moves")) {
    if (const json* list = r.array("moves"))
      for (const auto& row : *list) {
        detail::json_reader rm(row, "snapshot.moves[]");
        std::string id = rm.string("id");
        if (rm.ok() && !valid_move_id(id))
          rm.fail("id", "expected a move id");
        move_record m;
        m.topic = rm.topic("topic");
        m.partition = rm.partition("partition");
        m.from = rm.node("from", false);
        m.to = rm.node("to", false);
        m.state = rm.string("state");
        if (rm.ok() && !valid_move_state(m.state))
          rm.fail("state", "expected a move state");
        m.error = rm.string("error");
        if (rm.ok() && row.is_object() && row.contains("end") && row["end"].is_number_integer()
            && row["end"].get<int64_t>() >= -1)
          m.end = row["end"].get<int64_t>();
        else if (rm.ok())
          rm.fail("end", "expected an offset or -1");
        // Absent in snapshots of earlier versions: not recorded.
        if (rm.ok() && row.contains("log_start")) {
          if (row["log_start"].is_number_integer() && row["log_start"].get<int64_t>() >= -1)
            m.log_start = row["log_start"].get<int64_t>();
          else
            rm.fail("log_start", "expected an offset or -1");
        }
        m.epoch = rm.u64("epoch");
        m.updated_at = log_index{rm.u64("updated_at")};
        if (rm.ok() && m.from == m.to)
          rm.fail("to", "a move's destination differs from its source");
        if (!rm.ok())
          return rm.err();
        if (!finished_move_state(m.state))
          for (const auto& [other, o] : s.moves)
            if (!finished_move_state(o.state) && o.topic == m.topic && o.partition == m.partition)
              return error{errc::malformed, "snapshot.moves: two unfinished moves of one partition", {}, 0};
        if (!s.moves.emplace(std::move(id), std::move(m)).second)
          return error{errc::malformed, "snapshot.moves: duplicate move id", {}, 0};
      }
  }
  if (r.ok() && j.contains("deleted_topics")) {
    if (const json* list = r.array("deleted_topics"))
      for (const auto& row : *list) {
        detail::json_reader rd(row, "snapshot.deleted_topics[]");
        std::string name = rd.topic("topic");
        auto at = log_index{rd.u64("deleted_at")};
        if (!rd.ok())
          return rd.err();
        if (!s.deleted_topics.emplace(std::move(name), at).second)
          return error{errc::malformed, "snapshot.deleted_topics: duplicate topic", {}, 0};
      }
  }
  if (r.ok() && j.contains("transactions")) {  // absent in snapshots of earlier versions
    auto txns = detail::read_txn_rows(j["transactions"]);
    if (!txns)
      return txns.err();
    s.transactions = std::move(*txns);
  }
  if (r.ok() && j.contains("balancer")) {
    s.balancer = r.string("balancer");
    if (r.ok() && !json::parse(s.balancer, nullptr, false).is_object())
      r.fail("balancer", "expected a JSON object text");
  }
  if (!r.ok())
    return r.err();
  return s;
}

const char* to_string(broker_change c) {
  switch (c) {
    case broker_change::fence: return "fence";
    case broker_change::unfence: return "unfence";
    case broker_change::drain: return "drain";
    case broker_change::undrain: return "undrain";
    case broker_change::remove: return "remove";
    case broker_change::register_broker: return "register";
  }
  return "fence";
}

std::optional<broker_change> broker_change_from(const std::string& s) {
  for (auto c : {broker_change::fence, broker_change::unfence, broker_change::drain, broker_change::undrain,
                 broker_change::remove, broker_change::register_broker})
    if (s == to_string(c))
      return c;
  return std::nullopt;
}

bool valid_move_state(const std::string& s) {
  for (const char* name : {"queued", "copying", "cutover", "offsets", "rolling_back", "done", "failed", "cancelled"})
    if (s == name)
      return true;
  return false;
}

bool valid_move_id(const std::string& id) {
  return util::is_name(id, 1, 128);
}

bool finished_move_state(const std::string& s) { return s == "done" || s == "failed" || s == "cancelled"; }

std::string describe(const entry_payload& p) {
  if (auto* c = std::get_if<controller_entry>(&p))
    return "controller " + c->leader.str();
  if (auto* m = std::get_if<move_entry>(&p))
    return "move " + m->id + " " + m->topic + "-" + std::to_string(m->partition) + " " + m->from.str() + "->"
           + m->to.str() + " " + (m->expect.empty() ? std::string{"new"} : m->expect.front()) + "=>" + m->state;
  if (auto* o = std::get_if<owner_entry>(&p))
    return "owner " + o->topic + "-" + std::to_string(o->partition) + "=" + o->owner.str();
  if (auto* cfg = std::get_if<config_entry>(&p))
    return "config balancer " + cfg->balancer;
  if (auto* b = std::get_if<broker_entry>(&p))
    return std::string(to_string(b->change)) + " " + b->id.str()
           + (b->change == broker_change::register_broker ? " at " + b->endpoints.cluster : std::string{});
  if (auto* x = std::get_if<txn_entry>(&p))
    return "txn " + x->transactional_id + " pid " + std::to_string(x->record.producer_id) + "/"
           + std::to_string(x->record.producer_epoch) + " " + (x->remove ? "remove" : cluster::to_string(x->record.state))
           + " @v" + std::to_string(x->expect_version);
  const auto& t = std::get<topic_entry>(p);
  return std::string(t.remove ? "delete " : t.grow ? "grow " : t.alter ? "alter " : "topic ") + t.topic + " x" + std::to_string(t.partitions) + " @" +
         t.owner.str();
}

std::string describe(const log_entry& e) {
  return std::to_string(e.entry_term.value) + "/" + std::to_string(e.index.value) + " " + describe(e.payload);
}

}  // namespace moonmq::raft
