#include "goals/model_json.hpp"

#include "goals/model_json_fields.hpp"
#include "goals/text.hpp"

#include <cmath>
#include <limits>
#include <map>

namespace moonmq::goals {
namespace {

using json = nlohmann::json;

struct reader {
  std::string error;

  bool fail(const std::string& path, const std::string& what) {
    if (error.empty()) error = path + ": " + what;
    return false;
  }
  bool string_at(const json& o, const char* key, const std::string& path, std::string& out, bool required) {
    auto it = o.find(key);
    if (it == o.end()) return required ? fail(path + "." + key, "missing (expected a string)") : true;
    if (!it->is_string()) return fail(path + "." + key, "expected a string");
    out = it->get<std::string>();
    return true;
  }
  bool bool_at(const json& o, const char* key, const std::string& path, bool& out) {
    auto it = o.find(key);
    if (it == o.end()) return true;
    if (!it->is_boolean()) return fail(path + "." + key, "expected true or false");
    out = it->get<bool>();
    return true;
  }
  bool amount(const json& v, const std::string& path, double& out) {
    if (!v.is_number()) return fail(path, "expected a number >= 0");
    out = v.get<double>();
    if (!std::isfinite(out) || out < 0.0) return fail(path, "expected a finite number >= 0");
    return true;
  }
  bool opt_number(const json& o, const char* key, const std::string& path, std::optional<double>& out) {
    auto it = o.find(key);
    if (it == o.end()) return true;
    double v = 0.0;
    if (!amount(*it, path + "." + key, v)) return false;
    out = v;
    return true;
  }
};

json amount(double v) { return std::isfinite(v) ? json(v) : json(0.0); }

json loads_json(const std::array<double, kResourceCount>& l) {
  return json{{"nw_in", amount(l[0])}, {"nw_out", amount(l[1])}, {"disk", amount(l[2])}, {"partitions", amount(l[3])}};
}

json ids_json(const plan& p, const std::vector<broker_index>& v) {
  json out = json::array();
  for (auto b : v) out.push_back(p.broker_ids[b.value]);
  return out;
}

/// Reads `j["brokers"]` into m.brokers; "" or the first error, worded
/// "brokers[1].alive: expected true or false".
std::string read_brokers(const json& j, cluster_model& m) {
  reader rd;
  auto brokers = j.find("brokers");
  if (brokers == j.end() || !brokers->is_array()) return "brokers: missing or not an array";
  m.brokers.reserve(brokers->size());
  for (std::size_t i = 0; i < brokers->size(); ++i) {
    const json& b = (*brokers)[i];
    const std::string path = "brokers[" + std::to_string(i) + "]";
    if (!b.is_object()) return path + ": expected an object";
    broker_spec spec;
    if (!rd.string_at(b, "id", path, spec.id, true) || !rd.string_at(b, "rack", path, spec.rack, false) ||
        !rd.bool_at(b, "alive", path, spec.alive) || !rd.bool_at(b, "excluded", path, spec.excluded) ||
        !rd.bool_at(b, "warming", path, spec.warming) || !rd.bool_at(b, "draining", path, spec.draining) ||
        !rd.bool_at(b, "slow", path, spec.slow))
      return rd.error;
    if (!valid_rack_name(spec.rack)) return path + ".rack: at most 64 letters, digits, '.', '_' and '-'";
    if (auto w = b.find("weight"); w != b.end()) {
      const double v = w->is_number() ? w->get<double>() : 0.0;
      if (!(v >= kMinBrokerWeight && v <= kMaxBrokerWeight))
        return path + ".weight: expected a number in [" + format_amount(kMinBrokerWeight) + ", " +
               format_amount(kMaxBrokerWeight) + "]";
      spec.weight = v;
    }
    if (auto cap = b.find("capacity"); cap != b.end() && !cap->is_null()) {
      if (!cap->is_object()) return path + ".capacity: expected an object";
      for (std::size_t r = 0; r < kMeasuredResources; ++r) {
        const std::string key(resource_key(static_cast<resource>(r)));
        if (!rd.opt_number(*cap, key.c_str(), path + ".capacity", spec.capacity[r])) return rd.error;
      }
    }
    m.brokers.push_back(std::move(spec));
  }
  return {};
}

/// Reads `j["partitions"]` into m.replicas; "" or the first error.
std::string read_partitions(const json& j, cluster_model& m) {
  reader rd;
  auto parts = j.find("partitions");
  if (parts == j.end() || !parts->is_array()) return "partitions: missing or not an array";
  m.replicas.reserve(parts->size());
  for (std::size_t i = 0; i < parts->size(); ++i) {
    const json& p = (*parts)[i];
    const std::string path = "partitions[" + std::to_string(i) + "]";
    if (!p.is_object()) return path + ": expected an object";
    replica_spec spec;
    if (!rd.string_at(p, "topic", path, spec.topic, true) || !rd.string_at(p, "owner", path, spec.owner, true))
      return rd.error;
    auto part = p.find("partition");
    if (part == p.end() || !part->is_number_integer() || part->get<long long>() < 0 ||
        part->get<long long>() > std::numeric_limits<std::int32_t>::max())
      return path + ".partition: expected an integer >= 0";
    spec.partition = static_cast<std::int32_t>(part->get<long long>());
    if (auto load = p.find("load"); load != p.end() && !load->is_null()) {
      if (!load->is_object()) return path + ".load: expected an object";
      for (std::size_t r = 0; r < kMeasuredResources; ++r) {
        std::optional<double> v;
        const std::string key(resource_key(static_cast<resource>(r)));
        if (!rd.opt_number(*load, key.c_str(), path + ".load", v)) return rd.error;
        spec.load[r] = v.value_or(0.0);
      }
    }
    m.replicas.push_back(std::move(spec));
  }
  return {};
}

/// Reads the optional top-level fields (excluded_topics, goals, max_actions,
/// shared_storage, cooldown, in_flight, avoid) into m; "" or the first error.
std::string read_extensions(const json& j, cluster_model& m) {
  reader rd;
  if (auto ex = j.find("excluded_topics"); ex != j.end() && !ex->is_null()) {
    if (!ex->is_array()) return "excluded_topics: expected an array of strings";
    for (std::size_t i = 0; i < ex->size(); ++i) {
      if (!(*ex)[i].is_string()) return "excluded_topics[" + std::to_string(i) + "]: expected a string";
      m.excluded_topics.push_back((*ex)[i].get<std::string>());
    }
  }
  if (auto goals = j.find("goals"); goals != j.end() && !goals->is_null()) {
    if (!goals->is_object()) return "goals: expected an object";
    for (auto it = goals->begin(); it != goals->end(); ++it) {
      const std::string path = "goals." + it.key();
      if (!it->is_object()) return path + ": expected an object";
      goal_overrides o;
      const json& g = *it;
      if (auto e = g.find("Enabled"); e != g.end()) {
        if (!e->is_boolean()) return path + ".Enabled: expected true or false";
        o.enabled = e->get<bool>();
      }
      if (!rd.opt_number(g, "AvgDeviation", path, o.avg_deviation) ||
          !rd.opt_number(g, "DetectThreshold", path, o.detect_threshold) ||
          !rd.opt_number(g, "CapacityThreshold", path, o.capacity_threshold))
        return rd.error;
      if (auto pr = g.find("Priority"); pr != g.end()) {
        if (!pr->is_number_integer() || pr->get<long long>() < std::numeric_limits<int>::min() ||
            pr->get<long long>() > std::numeric_limits<int>::max())
          return path + ".Priority: expected an integer";
        o.priority = static_cast<int>(pr->get<long long>());
      }
      m.goals[it.key()] = o;
    }
  }
  if (auto ma = j.find("max_actions"); ma != j.end() && !ma->is_null()) {
    if (!ma->is_number_integer() || ma->get<long long>() < 0) return "max_actions: expected an integer >= 0";
    m.max_actions = static_cast<std::size_t>(ma->get<long long>());
  }
  if (auto sh = j.find("shared_storage"); sh != j.end() && !sh->is_null()) {
    if (!sh->is_boolean()) return "shared_storage: expected true or false";
    m.shared_storage = sh->get<bool>();
  }
  auto read_tp = [&](const json& e, const std::string& path, topic_partition& tp) -> bool {
    if (!e.is_object()) return rd.fail(path, "expected an object");
    if (!rd.string_at(e, "topic", path, tp.topic, true)) return false;
    auto part = e.find("partition");
    if (part == e.end() || !part->is_number_integer() || part->get<long long>() < 0 ||
        part->get<long long>() > std::numeric_limits<std::int32_t>::max())
      return rd.fail(path + ".partition", "expected an integer >= 0");
    tp.partition = static_cast<std::int32_t>(part->get<long long>());
    return true;
  };
  if (auto cd = j.find("cooldown"); cd != j.end() && !cd->is_null()) {
    if (!cd->is_array()) return "cooldown: expected an array";
    for (std::size_t i = 0; i < cd->size(); ++i) {
      topic_partition tp;
      if (!read_tp((*cd)[i], "cooldown[" + std::to_string(i) + "]", tp)) return rd.error;
      m.cooldown.push_back(std::move(tp));
    }
  }
  if (auto inf = j.find("in_flight"); inf != j.end() && !inf->is_null()) {
    if (!inf->is_array()) return "in_flight: expected an array";
    for (std::size_t i = 0; i < inf->size(); ++i) {
      const std::string path = "in_flight[" + std::to_string(i) + "]";
      in_flight_move mv;
      if (!read_tp((*inf)[i], path, mv.tp) || !rd.string_at((*inf)[i], "to", path, mv.to, true)) return rd.error;
      m.in_flight.push_back(std::move(mv));
    }
  }
  if (auto av = j.find("avoid"); av != j.end() && !av->is_null()) {
    if (!av->is_array()) return "avoid: expected an array";
    for (std::size_t i = 0; i < av->size(); ++i) {
      const std::string path = "avoid[" + std::to_string(i) + "]";
      avoided_destination a;
      if (!read_tp((*av)[i], path, a.tp) || !rd.string_at((*av)[i], "broker", path, a.broker, true))
        return rd.error;
      m.avoid.push_back(std::move(a));
    }
  }
  return {};
}

}  // namespace

namespace detail {

outcome<cluster_model> read_model_fields(const json& j, cluster_model m, partitions_source partitions) {
  std::string err = read_brokers(j, m);
  if (err.empty() && partitions == partitions_source::json) err = read_partitions(j, m);
  if (err.empty()) err = read_extensions(j, m);
  if (err.empty()) err = validate(m);
  if (!err.empty()) return outcome<cluster_model>::failure(std::move(err));
  return m;
}

outcome<cluster_model> model_from_dom_text(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // contained here: errors leave as values
    return outcome<cluster_model>::failure(std::string("malformed JSON: ") + e.what());
  }
  return model_from_json(j);
}

}  // namespace detail

outcome<cluster_model> model_from_json(const json& j) {
  if (!j.is_object()) return outcome<cluster_model>::failure("model: expected a JSON object");
  return detail::read_model_fields(j, cluster_model{}, detail::partitions_source::json);
}

json model_to_json(const cluster_model& m) {
  json brokers = json::array();
  for (const auto& b : m.brokers) {
    json o{{"id", b.id}, {"alive", b.alive}, {"excluded", b.excluded}};
    if (b.warming) o["warming"] = true;
    if (b.draining) o["draining"] = true;
    if (b.slow) o["slow"] = true;
    if (!b.rack.empty()) o["rack"] = b.rack;
    if (b.weight != 1.0) o["weight"] = b.weight;
    json cap = json::object();
    for (std::size_t r = 0; r < kMeasuredResources; ++r)
      if (b.capacity[r]) cap[std::string(resource_key(static_cast<resource>(r)))] = amount(*b.capacity[r]);
    if (!cap.empty()) o["capacity"] = cap;
    brokers.push_back(std::move(o));
  }
  json parts = json::array();
  for (const auto& p : m.replicas)
    parts.push_back({{"topic", p.topic}, {"partition", p.partition}, {"owner", p.owner},
                     {"load", {{"nw_in", amount(p.load[0])}, {"nw_out", amount(p.load[1])}, {"disk", amount(p.load[2])}}}});
  json goals = json::object();
  for (const auto& [name, o] : m.goals) {
    json g = json::object();
    if (o.enabled) g["Enabled"] = *o.enabled;
    if (o.avg_deviation) g["AvgDeviation"] = amount(*o.avg_deviation);
    if (o.detect_threshold) g["DetectThreshold"] = amount(*o.detect_threshold);
    if (o.priority) g["Priority"] = *o.priority;
    if (o.capacity_threshold) g["CapacityThreshold"] = amount(*o.capacity_threshold);
    goals[name] = g;
  }
  json out{{"brokers", brokers}, {"partitions", parts}, {"excluded_topics", m.excluded_topics},
           {"goals", goals}, {"max_actions", m.max_actions}};
  // Only when set: local-storage models read and write as before.
  if (m.shared_storage) out["shared_storage"] = true;
  if (!m.cooldown.empty()) {
    json cd = json::array();
    for (const auto& tp : m.cooldown) cd.push_back({{"topic", tp.topic}, {"partition", tp.partition}});
    out["cooldown"] = cd;
  }
  if (!m.in_flight.empty()) {
    json inf = json::array();
    for (const auto& mv : m.in_flight) inf.push_back({{"topic", mv.tp.topic}, {"partition", mv.tp.partition}, {"to", mv.to}});
    out["in_flight"] = inf;
  }
  if (!m.avoid.empty()) {
    json av = json::array();
    for (const auto& a : m.avoid)
      av.push_back({{"topic", a.tp.topic}, {"partition", a.tp.partition}, {"broker", a.broker}});
    out["avoid"] = av;
  }
  return out;
}

json plan_to_reassignment(const plan& p) {
  std::vector<std::pair<std::string, int32_t>> order;
  std::map<std::pair<std::string, int32_t>, std::pair<std::string, std::string>> moved;  // first from, last to
  for (const auto& a : p.actions) {
    auto key = std::make_pair(a.topic, static_cast<int32_t>(a.partition));
    auto it = moved.find(key);
    if (it == moved.end()) {
      order.push_back(key);
      moved[key] = {a.from, a.to};
    } else {
      it->second.second = a.to;
    }
  }
  json partitions = json::array();
  for (const auto& key : order)
    if (moved[key].second != moved[key].first)  // moved away and back: no move
      partitions.push_back(
        {{"topic", key.first}, {"partition", key.second}, {"replicas", json::array({moved[key].second})}});
  return json{{"version", 1}, {"partitions", partitions}};
}

json plan_to_json(const plan& p) {
  json actions = json::array();
  for (const auto& a : p.actions) {
    json o{{"type", a.type == action_type::swap ? "SWAP" : "MOVE"}, {"topic", a.topic}, {"partition", a.partition},
           {"from", a.from}, {"to", a.to}, {"goal", a.goal}, {"reason", a.reason}};
    if (a.swap_with) o["swap_with"] = {{"topic", a.swap_with->topic}, {"partition", a.swap_with->partition}};
    actions.push_back(std::move(o));
  }
  json goals = json::array();
  for (const auto& g : p.goals) {
    json outside = json::array();
    for (const auto& o : g.still_outside) outside.push_back({{"broker", p.broker_ids[o.broker.value]}, {"why", o.why}});
    goals.push_back({{"name", g.name}, {"hard", g.hard}, {"priority", g.priority}, {"basis", g.before.basis},
                     {"mean", amount(g.before.mean)}, {"lower", amount(g.before.lower)},
                     {"upper", amount(g.before.upper)}, {"violations_before", ids_json(p, g.before.violators)},
                     {"violations_after", ids_json(p, g.after.violators)}, {"cost_before", amount(g.before.cost)},
                     {"cost_after", amount(g.after.cost)}, {"explanation", g.explanation},
                     {"still_outside", std::move(outside)}});
  }
  json before = json::object(), after = json::object();
  for (std::size_t b = 0; b < p.broker_ids.size(); ++b) {
    before[p.broker_ids[b]] = loads_json(p.brokers_before[b]);
    after[p.broker_ids[b]] = loads_json(p.brokers_after[b]);
  }
  json out{{"actions", actions}, {"goals", goals}, {"brokers_before", before}, {"brokers_after", after},
            {"balancedness_before", amount(p.balancedness_before)},
            {"balancedness_after", amount(p.balancedness_after)}, {"summary", p.summary}};
  if (p.count_moves_lower_bound) {
    out["moves_lower_bound"] = *p.count_moves_lower_bound;
    if (*p.count_moves_lower_bound > 0)
      out["moves_to_lower_bound"] =
        static_cast<double>(p.actions.size()) / static_cast<double>(*p.count_moves_lower_bound);
  }
  if (p.drain)
    out["drain"] = json{{"brokers", p.drain->brokers}, {"moved", p.drain->moved}, {"left", p.drain->left},
                        {"explanation", p.drain->explanation}};
  return out;
}

}  // namespace moonmq::goals
