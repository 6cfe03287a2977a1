#include "actors/load_meter.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/broker_traits_view.hpp"
#include "actors/session_probe.hpp"
#include "placement/cpu_stat.hpp"
#include "placement/load_tracker.hpp"
#include "placement/scorer.hpp"
#include "util/clock.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

auto logger() { return log::get("placement"); }

placement::scorer_config scorer_of(const config::placement_config& c) {
  placement::scorer_config s;
  s.session_weight = c.session_weight;
  s.byte_rate_weight = c.byte_rate_weight;
  s.cpu_weight = c.cpu_weight;
  s.partition_weight = c.partition_weight;
  s.overload_cpu = c.overload_cpu;
  s.overload_inflow_bytes_per_sec = c.overload_inflow_bytes_per_sec;
  s.cpu = placement::parse_cpu_source(c.cpu).value_or(placement::cpu_source::higher);
  s.heartbeat_interval_ms = c.heartbeat_ms;
  s.stale_after_heartbeats = c.stale_after_heartbeats;
  s.spread_clients = c.spread_clients;
  return s;
}

/// The whole text of a small file (a /proc file: its size reads as 0, so
/// no size is trusted); "" when unreadable.
std::string slurp(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct load_meter_state {
  load_meter_settings settings;
  placement::scorer_config scorer;
  placement::load_tracker tracker;
  std::set<std::string> excluded;          ///< excluded_brokers
  int64_t started_ms = 0;
  int64_t last_report_ms = 0;
  uint64_t heartbeats = 0;
  bool pull_running = false;
  std::optional<placement::cpu_ticks> last_cpu;
  std::string cpu_error;                    ///< last /proc parse failure ("" = fine)
  json local;                               ///< the latest local report (null before the first)
  std::map<std::string, std::string> peer_errors;  ///< peer id → why its last pull gave no report
  json last_recommendation;                 ///< null before the first
  static inline const char* name = "load_meter";
};

using self_ptr = load_meter_actor::stateful_pointer<load_meter_state>;

/// Process and machine cpu since the previous heartbeat (0 on the first, or
/// when /proc cannot be read: logged once per distinct error).
placement::cpu_load sample_cpu(load_meter_state& st) {
  const auto& dir = st.settings.proc_dir;
  auto proc = placement::parse_process_stat(slurp(dir + "/self/stat"));
  auto machine = placement::parse_machine_stat(slurp(dir + "/stat"));
  std::string error;
  if (!proc)
    error = dir + "/self/stat: " + placement::to_string(proc.err());
  else if (!machine)
    error = dir + "/stat: " + placement::to_string(machine.err());
  if (!error.empty()) {
    if (error != st.cpu_error)
      logger()->warn("placement.cpu_unreadable broker={} error=\"{}\" msg=\"cpu reported as 0\"",
                     st.settings.broker_id, error);
    st.cpu_error = error;
    st.last_cpu.reset();
    return {};
  }
  st.cpu_error.clear();
  placement::cpu_ticks now = *machine;
  now.process = *proc;
  placement::cpu_load load;
  if (st.last_cpu)
    load = placement::cpu_between(*st.last_cpu, now);
  st.last_cpu = now;
  return load;
}

/// Samples, validates and publishes the local report; keeps it in the tracker.
void sample_local(self_ptr self, int64_t now) {
  auto& st = self->state;
  // Strictly increasing sample times: the tracker ignores a repeated or older
  // one, which would make this broker go stale after a clock step back.
  int64_t at = std::max(now, st.last_report_ms + 1);
  st.last_report_ms = at;
  placement::load_report r;
  r.broker = placement::broker_id{st.settings.broker_id};
  r.report_time_ms = at;
  r.started_ms = st.started_ms;
  placement::fill_report(r, st.settings.probe->sample(at));
  auto cpu = sample_cpu(st);
  r.process_cpu = cpu.process;
  r.machine_cpu = cpu.machine;
  r.draining = st.settings.config.draining || st.excluded.count(st.settings.broker_id) > 0;
  if (auto ok = placement::validate(r); !ok) {
    // Cannot happen: every figure is clamped or counted here. Logged loudly,
    // the previous report stays published (and goes stale).
    logger()->error("placement.local_report_invalid broker={} error=\"{}\"", st.settings.broker_id,
                    placement::to_string(ok.err()));
    return;
  }
  st.local = placement::to_json(r);
  st.settings.published->set(st.local);
  st.tracker.observe(std::move(r), now);
}

/// GETs every peer's /cluster/loads and posts the session reports back.
void pull_peers(self_ptr self) {
  auto& st = self->state;
  auto peers = st.settings.peers->all();
  if (peers.empty() || st.pull_running)
    return;
  st.pull_running = true;
  auto handle = caf::actor_cast<load_meter_actor>(self);
  transport::survey_peers(peers, "/cluster/loads", st.settings.peer_timeout,
                          [handle](std::vector<transport::peer_answer> answers) {
                            json rows = json::array();
                            for (auto& a : answers) {
                              json row{{"id", a.id}, {"ok", a.ok}, {"error", a.error}};
                              if (a.ok && a.body.is_object() && a.body.contains("session_load"))
                                row["session_load"] = std::move(a.body["session_load"]);
                              if (a.ok && a.body.is_object())
                                for (const char* key : {"broker_id", "rack", "weight", "topic_placement"})
                                  if (a.body.contains(key))
                                    row[key] = std::move(a.body[key]);
                              rows.push_back(std::move(row));
                            }
                            caf::anon_send(handle, step_atom::value, rows.dump());
                          });
}

void note_peer_error(load_meter_state& st, const std::string& id, std::string error, bool warn) {
  auto& held = st.peer_errors[id];
  if (held != error) {
    if (warn)
      logger()->warn("placement.report_refused broker={} peer={} error=\"{}\"", st.settings.broker_id, id, error);
    else
      logger()->info("placement.peer_unreachable broker={} peer={} error=\"{}\"", st.settings.broker_id, id, error);
  }
  held = std::move(error);
}

/// A peer's account of itself in its answer (the defaults for what an
/// earlier version leaves out: no rack, weight 1, no placed topic entries).
announced_traits traits_of(const json& row, int64_t heard_ms) {
  announced_traits t;
  t.heard_ms = heard_ms;
  if (auto it = row.find("rack"); it != row.end() && it->is_string())
    t.rack = it->get<std::string>();
  // Cluster.Weight's range; anything else (an infinite weight would pull
  // every new partition to one broker) keeps the default.
  if (auto it = row.find("weight"); it != row.end() && it->is_number() && std::isfinite(it->get<double>())
                                     && it->get<double>() >= 0.01 && it->get<double>() <= 100)
    t.weight = it->get<double>();
  if (auto it = row.find("topic_placement"); it != row.end() && it->is_number_integer()
                                              && it->get<int64_t>() >= 0 && it->get<int64_t>() <= 1000000)
    t.topic_placement = static_cast<int32_t>(it->get<int64_t>());
  return t;
}

void take_answers(self_ptr self, const std::string& text) {
  auto& st = self->state;
  st.pull_running = false;
  auto rows = json::parse(text, nullptr, false);
  if (!rows.is_array())
    return;  // cannot happen: built by pull_peers
  auto now = util::wall_ms();
  for (const auto& row : rows) {
    auto id = row.value("id", std::string{});
    placement::broker_id bid{id};
    if (!row.value("ok", false)) {
      st.tracker.set_alive(bid, false);
      note_peer_error(st, id, row.value("error", std::string{"no answer"}), false);
      continue;
    }
    st.tracker.set_alive(bid, true);
    auto named = row.find("broker_id");  // an answer for another broker (a reused address) is not this peer's
    if (st.settings.traits && (named == row.end() || (named->is_string() && named->get<std::string>() == id)))
      st.settings.traits->set(id, traits_of(row, util::monotonic_ms()));
    if (!row.contains("session_load") || row["session_load"].is_null()) {
      // An older peer, or one whose meter has not sampled yet: no report, not dead.
      note_peer_error(st, id, "its /cluster/loads has no session_load yet", false);
      continue;
    }
    auto report = placement::report_from_json(row["session_load"]);
    if (!report) {
      note_peer_error(st, id, "session_load: " + placement::to_string(report.err()), true);
      continue;
    }
    if (report->broker.str() != id) {
      note_peer_error(st, id, "session_load names broker '" + report->broker.str() + "'", true);
      continue;
    }
    auto outcome = st.tracker.observe(std::move(*report), now);
    if (outcome == placement::observe_outcome::reset)
      logger()->info("placement.peer_reset broker={} peer={} msg=\"counters went backwards: rates untrusted for one "
                     "report\"",
                     st.settings.broker_id, id);
    st.peer_errors.erase(id);
  }
}

std::string client_url(const load_meter_state& st, const std::string& id) {
  if (id == st.settings.broker_id) {
    auto port = st.settings.client_port ? st.settings.client_port->load() : 0;
    return port == 0 ? std::string{} : "http://" + st.settings.client_host + ":" + std::to_string(port);
  }
  auto p = st.settings.peers->find(id);
  return p && !p->client_address.empty() ? "http://" + p->client_address : std::string{};
}

std::pair<int32_t, std::string> recommend_for(self_ptr self, const std::string& client, const std::string& topic,
                                              const std::vector<std::string>& owner_ids) {
  auto& st = self->state;
  auto now = util::wall_ms();
  // Brokers an operator excluded count as draining; brokers without a client
  // URL cannot be pinned to and are left out (listed in the details).
  std::vector<placement::broker_load> brokers;
  json unaddressable = json::array();
  for (auto& b : st.tracker.snapshot()) {
    if (client_url(st, b.report.broker.str()).empty()) {
      unaddressable.push_back(b.report.broker.str());
      continue;
    }
    if (st.excluded.count(b.report.broker.str()))
      b.report.draining = true;
    brokers.push_back(std::move(b));
  }
  placement::placement_request req{client, topic.empty() ? std::nullopt : std::optional<std::string>(topic)};
  std::vector<placement::broker_id> owners;
  owners.reserve(owner_ids.size());
  for (const auto& o : owner_ids)
    owners.emplace_back(o);
  auto rec = placement::recommend(brokers, now, req, st.scorer, owners);
  if (!rec) {
    json e{{"error", "invalid_request"}, {"message", placement::to_string(rec.err())}};
    return {400, e.dump()};
  }
  auto details = placement::to_json(*rec);
  if (!unaddressable.empty())
    details["no_client_address"] = unaddressable;
  json answer;
  int32_t status = 200;
  if (const auto* best = rec->best()) {
    answer = json{{"broker_id", best->broker.str()},
                  {"url", client_url(st, best->broker.str())},
                  {"score", best->score},
                  {"details", details}};
  } else {
    status = 503;
    answer = json{{"error", "no_eligible_broker"},
                  {"message", "no broker can take a session now (every one is dead, draining, stale or excluded)"},
                  {"details", details}};
  }
  st.last_recommendation = json{{"at_ms", now},
                                {"client_id", client},
                                {"topic", topic.empty() ? json(nullptr) : json(topic)},
                                {"status", status},
                                {"broker_id", answer.value("broker_id", std::string{})},
                                {"details", details}};
  return {status, answer.dump()};
}

json status_of(const load_meter_state& st) {
  auto now = util::wall_ms();
  json tracker = json::array();
  for (const auto& b : st.tracker.snapshot())
    tracker.push_back(json{{"broker_id", b.report.broker.str()},
                           {"seen_ms", b.seen_ms},
                           {"age_ms", now - b.seen_ms},
                           {"alive", b.alive},
                           {"counters_reset", b.counters_reset},
                           {"excluded", st.excluded.count(b.report.broker.str()) > 0},
                           {"report", placement::to_json(b.report)}});
  json peers = json::array();
  for (const auto& p : st.settings.peers->all()) {
    json row{{"id", p.id}, {"url", client_url(st, p.id)}};
    if (auto e = st.peer_errors.find(p.id); e != st.peer_errors.end())
      row["last_error"] = e->second;
    peers.push_back(std::move(row));
  }
  const auto& c = st.settings.config;
  json cfg{{"heartbeat_ms", c.heartbeat_ms},
           {"stale_after_heartbeats", c.stale_after_heartbeats},
           {"client_session_ttl_ms", c.client_session_ttl_ms},
           {"session_weight", c.session_weight},
           {"byte_rate_weight", c.byte_rate_weight},
           {"cpu_weight", c.cpu_weight},
           {"partition_weight", c.partition_weight},
           {"overload_cpu", c.overload_cpu},
           {"overload_inflow_bytes_per_sec", c.overload_inflow_bytes_per_sec},
           {"cpu", c.cpu},
           {"spread_clients", c.spread_clients},
           {"draining", c.draining},
           {"excluded_brokers", st.settings.excluded_brokers}};
  json j{{"broker_id", st.settings.broker_id}, {"heartbeat_ms", c.heartbeat_ms}, {"heartbeats", st.heartbeats},
         {"started_ms", st.started_ms},        {"local", st.local},               {"tracker", tracker},
         {"peers", peers},                     {"last_recommendation", st.last_recommendation},
         {"config", cfg}};
  if (!st.cpu_error.empty())
    j["cpu_error"] = st.cpu_error;
  return j;
}

load_meter_actor::behavior_type load_meter_fn(self_ptr self, load_meter_settings settings) {
  auto& init = self->state;
  init.settings = std::move(settings);
  if (!init.settings.probe)  // nobody feeds it: sessions and bytes stay 0
    init.settings.probe = std::make_shared<session_probe>(init.settings.config.client_session_ttl_ms,
                                                          init.settings.config.client_session_ttl_ms);
  if (!init.settings.published)
    init.settings.published = std::make_shared<session_load_view>();
  init.scorer = scorer_of(init.settings.config);
  init.excluded.insert(init.settings.excluded_brokers.begin(), init.settings.excluded_brokers.end());
  init.started_ms = util::wall_ms();
  if (auto ok = placement::validate(init.scorer); !ok)
    // Cannot happen: config/loader.cpp checks the same ranges.
    logger()->error("placement.config_invalid error=\"{}\"", placement::to_string(ok.err()));
  logger()->info("placement.meter_started broker={} heartbeat_ms={} peers={}", init.settings.broker_id,
                 init.settings.config.heartbeat_ms, init.settings.peers->size());
  self->send(self, tick_atom::value);
  return {
    [self](tick_atom) {
      auto& st = self->state;
      ++st.heartbeats;
      sample_local(self, util::wall_ms());
      pull_peers(self);
      self->delayed_send(self, milliseconds{st.settings.config.heartbeat_ms}, tick_atom::value);
    },
    [self](step_atom, std::string& text) { take_answers(self, text); },
    [self](recommend_atom, std::string& client, std::string& topic,
           std::vector<std::string>& owners) -> caf::result<int32_t, std::string> {
      auto [status, body] = recommend_for(self, client, topic, owners);
      return caf::make_result(status, std::move(body));
    },
    [self](status_atom) { return status_of(self->state).dump(); },
  };
}

}  // namespace

load_meter_actor spawn_load_meter(caf::actor_system& sys, load_meter_settings settings, registry_actor reg) {
  auto a = sys.spawn(load_meter_fn, std::move(settings));
  enroll(reg, caf::actor_cast<caf::actor>(a), "load_meter", "load_meter");
  return a;
}

}  // namespace moonmq
