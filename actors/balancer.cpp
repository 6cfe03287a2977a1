#include "actors/balancer.hpp"
#include "actors/balancer_impl.hpp"

#include <atomic>
#include <cmath>
#include <mutex>
#include <set>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "cluster/move_journal.hpp"
#include "cluster/partition_map.hpp"
#include "config/dynamic.hpp"
#include "goals/detector.hpp"
#include "goals/load_model.hpp"
#include "goals/model_json.hpp"
#include "goals/move_history.hpp"
#include "goals/slow_brokers.hpp"
#include "peers/move_submit.hpp"
#include "plugins/goal_loader.hpp"
#include "util/clock.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

using namespace balancer_detail;

/// How often a loop that is off looks at the metadata log's settings again.
constexpr milliseconds settings_poll{1000};
/// Shared storage: how often the loop looks for a failover due (cheap: the
/// applied image and the leader's silence counts), so a handover follows
/// the wait's end within this (bench/shared: a 1 s poll added up to 1 s).
constexpr milliseconds failover_poll{100};
/// ... and how soon after a failover pass another may start (partitions no
/// broker takes stay due; each pass builds the whole model).
constexpr int64_t failover_retry_ms = 1000;

/// Collects the inputs of one pass from several threads and posts them to
/// the actor as one JSON text when the last arrives.
struct pass_inputs {
  std::mutex mtx;
  json inputs{{"peers", json::array()}, {"moves", json::array()}, {"announce", json::array()}};
  std::atomic<int> pending{0};
  balancer_actor owner;
  bool execute = false;

  template <class F>
  void add(F&& f) {
    {
      std::lock_guard<std::mutex> g{mtx};
      f(inputs);
    }
    if (--pending == 0)
      caf::anon_send(owner, step_atom::value, inputs.dump(), execute);
  }
};

void supersede(self_ptr self, const std::string& by) {
  auto& st = self->state;
  if (st.superseded)
    return;
  st.superseded = true;
  st.superseded_by = by;
  // Raft decides who is the controller: this pass acts no more, and the
  // next one claims again (which only the leader of the current term can).
  logger()->warn("balancer.superseded broker={} epoch={} by=\"{}\" msg=\"not the controller until Raft elects "
                 "this broker again\"",
                 st.settings.broker_id, st.epoch, by);
  st.epoch = 0;
}

/// True while the metadata log says some broker is draining: the loop then
/// runs, claims and moves the drained partitions even when the balancer is
/// off or in DryRun (an operator's drain is not a proposal to review).
bool draining_any(const balancer_state& st) {
  if (!st.settings.image)
    return false;
  auto standing = st.settings.image->standing();
  if (!standing->draining.empty())
    return true;
  // A removed broker handed a partition by a move that was already running.
  if (standing->removed.empty())
    return false;
  auto owners = st.settings.image->get();
  return std::any_of(owners->begin(), owners->end(),
                     [&](const auto& row) { return standing->removed.count(row.second) != 0; });
}

/// Starts a pass: re-announces the claim (when executing) and collects
/// every broker's loads and moves. A failover pass (`failover_only`) claims
/// and announces whatever DryRun says, asks no fenced broker (it would only
/// time out) and makes nothing but the failover.
void start_pass(self_ptr self, bool execute, bool failover_only = false) {
  auto& st = self->state;
  st.pass_running = true;
  auto peers = st.settings.peers->all();
  if (failover_only && st.settings.image) {
    auto standing = st.settings.image->standing();
    peers.erase(std::remove_if(peers.begin(), peers.end(),
                               [&](const auto& p) { return standing->fenced.count(p.id) != 0; }),
                peers.end());
  }
  auto in = std::make_shared<pass_inputs>();
  in->owner = caf::actor_cast<balancer_actor>(self);
  in->execute = execute;
  in->inputs["failover_only"] = failover_only;
  // A DryRun loop moves nothing, so it neither claims nor announces: turning
  // DryRun on somewhere to preview plans must not supersede the live loop.
  bool controls = execute && (failover_only || !st.settings.config.dry_run || draining_any(st));
  in->pending = 4 + (controls ? static_cast<int>(peers.size()) + 1 : 0);
  if (controls) {
    self->request(st.cstate, local_timeout, get_atom::value)
      .then(
        [in](int64_t highest, std::string& holder) {
          in->add([&](json& j) { j["fence"] = {{"epoch", highest}, {"holder", holder}}; });
        },
        [in](caf::error& e) { in->add([&](json& j) { j["fence_error"] = caf::to_string(e); }); });
    for (const auto& peer : peers)
      transport::call_peer(peer, "POST", "/cluster/controller", "{}", st.epoch, st.settings.broker_id,
                           st.settings.peer_timeout, [in, id = peer.id](int status, json body, std::string error) {
                             in->add([&](json& j) {
                               j["announce"].push_back(
                                 {{"id", id}, {"status", status}, {"body", body}, {"error", error}});
                             });
                           });
  }
  st.settings.local_loads([in](json body) { in->add([&](json& j) { j["local"] = std::move(body); }); });
  transport::survey_peers(peers, "/cluster/loads", st.settings.peer_timeout, [in](std::vector<transport::peer_answer> a) {
    in->add([&](json& j) {
      for (auto& p : a)
        j["peers"].push_back({{"id", p.id}, {"ok", p.ok}, {"error", p.error}, {"body", p.body}});
    });
  });
  transport::survey_peers(peers, "/cluster/moves", st.settings.peer_timeout, [in](std::vector<transport::peer_answer> a) {
    in->add([&](json& j) {
      for (auto& p : a)
        if (p.ok && p.body.contains("moves") && p.body["moves"].is_array())
          for (auto& row : p.body["moves"])
            j["moves"].push_back(row);
    });
  });
  self->request(st.reassigner, local_timeout, list_atom::value)
    .then(
      [in](std::string& rows) {
        in->add([&](json& j) {
          auto list = json::parse(rows, nullptr, false);
          if (list.is_array())
            for (auto& row : list)
              j["moves"].push_back(row);
        });
      },
      [in](caf::error&) { in->add([](json&) {}); });
}

/// Sends one planned move to the partition's owner under this loop's epoch.
void execute_move(self_ptr self, const goals::plan_action& a) {
  auto& st = self->state;
  auto handle = caf::actor_cast<balancer_actor>(self);
  auto report = [handle, topic = a.topic, partition = a.partition, to = a.to](int status, std::string message,
                                                                              bool unknown = false) {
    caf::anon_send(handle, step_atom::value, topic, partition, to, static_cast<int32_t>(status), unknown,
                   std::move(message));
  };
  // Why, in the move's row: the goal that moved the partition and its reason.
  auto reason = cluster::clip_move_reason(a.reason.empty() ? a.goal : a.goal + ": " + a.reason);
  if (a.from == st.settings.broker_id) {
    self->request(st.reassigner, local_timeout, move_atom::value, a.topic, a.partition, a.to, st.epoch,
                  st.settings.broker_id, std::string{"balancer"}, reason, std::string{})
      .then([report](std::string& row) { report(202, row); },
            [report](caf::error& e) { report(http_status_of(e), error_code_of(e) + ": " + message_of(e)); });
    return;
  }
  for (const auto& peer : st.settings.peers->all())
    if (peer.id == a.from) {
      cluster::move_request request{cluster::topic_partition{a.topic, a.partition}, a.to, "balancer", reason, {}};
      transport::submit_move(peer, std::move(request), st.epoch, st.settings.broker_id, st.settings.peer_timeout,
                             [report](transport::move_submit_outcome o) {
                               auto code = transport::answer_error_code(o.body);
                               report(o.status, o.error.empty() ? o.body.dump() : code + " " + o.error, o.unknown());
                             });
      return;
    }
  report(0, "broker " + a.from + " is not a peer");
}

/// Builds the model from a pass's inputs, plans, and executes (or not).
void finish_pass(self_ptr self, const json& in, bool execute) {
  auto& st = self->state;
  const auto& cfg = st.settings.config;
  auto started = util::wall_ms();
  json pass{{"started_ms", started},        {"epoch", st.epoch}, {"dry_run", cfg.dry_run},
            {"executing", execute},          {"errors", json::array()}, {"executed", json::array()}};
  if (execute) {
    if (in.contains("fence")) {
      auto highest = in["fence"].value("epoch", int64_t{0});
      auto holder = in["fence"].value("holder", std::string{});
      if (highest > st.epoch || (highest == st.epoch && holder != st.settings.broker_id))
        supersede(self, "local fence: epoch " + std::to_string(highest) + " held by " + holder);
    }
    for (const auto& a : in["announce"]) {
      auto status = a.value("status", 0);
      const auto& body = a["body"];
      if (status == 409) {
        supersede(self, a.value("id", std::string{}) + ": " + (body.is_object() ? body.value("message", std::string{"409"}) : std::string{"409"}));
      } else if (status != 200)
        pass["errors"].push_back("announce to " + a.value("id", std::string{}) + ": "
                                 + (a.value("error", std::string{}).empty() ? "HTTP " + std::to_string(status)
                                                                            : a.value("error", std::string{})));
    }
  }
  // Brokers and their reports.
  std::map<std::string, bool> alive{{st.settings.broker_id, true}};
  std::vector<cluster::partition_report> reports;
  std::map<std::pair<std::string, goals::topic_partition>, std::pair<uint64_t, uint64_t>> counters;
  auto& traits = st.traits;
  if (in.contains("local")) {
    reports = cluster::parse_loads(in["local"]);
    read_counters(in["local"], counters);
    read_traits(in["local"], st.settings.broker_id, traits[st.settings.broker_id], pass["errors"]);
  }
  for (const auto& p : in["peers"]) {
    auto id = p.value("id", std::string{});
    alive[id] = p.value("ok", false);
    if (!alive[id]) {
      pass["errors"].push_back("loads of " + id + ": " + p.value("error", std::string{}));
      continue;
    }
    read_traits(p["body"], id, traits[id], pass["errors"]);
    auto more = cluster::parse_loads(p["body"]);
    reports.insert(reports.end(), more.begin(), more.end());
    read_counters(p["body"], counters);
  }
  const bool failover_only = in.value("failover_only", false);
  // A failover pass runs between the loop's passes: it does not advance the
  // slow-broker rule.
  auto slow = mark_slow_brokers(st, in, alive, execute && !failover_only);
  auto placements = cluster::merge_partition_reports(reports);
  auto now = util::wall_ms();
  for (const auto& [tp, place] : placements) {
    goals::topic_partition gtp{tp.topic, tp.partition};
    auto c = counters.find({place.owner.value, gtp});
    if (!alive.count(place.owner.value) || c == counters.end())
      continue;  // the owner did not report it this pass: keep its last samples
    auto& seen = st.last_owner[gtp];
    if (seen != place.owner.value) {
      if (!seen.empty())
        st.model.forget(gtp);  // a new owner's counters are another series
      seen = place.owner.value;
    }
    st.model.observe({gtp, place.owner.value, c->second.first, c->second.second,
                      static_cast<double>(place.size_bytes), now});
  }
  std::set<std::string> excluded(cfg.excluded_brokers.begin(), cfg.excluded_brokers.end());
  auto standing = st.settings.image ? st.settings.image->standing() : std::make_shared<const broker_standing>();
  auto brokers = [&](const std::set<std::string>& warming) {
    std::vector<goals::broker_spec> list;
    for (const auto& [id, up] : alive) {
      goals::broker_spec b;
      if (auto t = traits.find(id); t != traits.end()) {
        b.rack = t->second.rack;
        b.weight = t->second.weight;
      }
      b.id = id;
      b.alive = up;
      b.excluded = excluded.count(id) != 0;
      b.warming = warming.count(id) != 0;
      // A removed broker that still owns a partition (handed to it by a move
      // that was running when it was removed) is emptied like a draining one.
      b.draining = standing->draining.count(id) || standing->removed.count(id);
      b.slow = up && slow.count(id);
      list.push_back(b);
    }
    return list;
  };
  st.model.set_brokers(brokers({}));
  auto model = st.model.to_model();
  // A broker holding a partition whose window is incomplete has a load that
  // is not known yet: it is not a destination in this pass.
  std::set<std::string> incomplete;
  for (const auto& r : model.replicas)
    if (!r.trusted)
      incomplete.insert(r.owner);
  if (!incomplete.empty()) {
    st.model.set_brokers(brokers(incomplete));
    model = st.model.to_model();
  }
  model.excluded_topics = cfg.excluded_topics;
  model.max_actions = static_cast<size_t>(std::max(0, cfg.max_actions_per_detect));
  // Moves copy nothing: no DISK goals, a tighter band, new brokers filled
  // in one pass (goals::cluster_model::shared_storage).
  model.shared_storage = st.settings.shared_storage;
  for (const auto& [name, g] : cfg.goals) {
    goals::goal_overrides o;
    o.enabled = g.enabled;
    o.avg_deviation = g.avg_deviation;
    o.detect_threshold = g.detect_threshold;
    o.priority = g.priority;
    o.capacity_threshold = g.capacity_threshold;
    model.goals[name] = o;
  }
  std::set<std::string> known;
  for (const auto& b : model.brokers)
    known.insert(b.id);
  // Replicas whose owner is not a broker of the cluster cannot be modelled.
  model.replicas.erase(std::remove_if(model.replicas.begin(), model.replicas.end(),
                                      [&](const goals::replica_spec& r) { return !known.count(r.owner); }),
                       model.replicas.end());
  // The journal: running moves count at their destination; a move that
  // ended holds its partition still and keeps it off the broker it left or
  // failed to reach (goals/move_history.hpp, docs/balancer.md "Stability rules").
  std::vector<goals::journal_move> journal;
  for (const auto& row : in["moves"])
    if (auto m = goals::journal_move_from_json(row))
      journal.push_back(std::move(*m));
  goals::add_move_history(model, journal,
                          goals::make_stability_windows(cfg.interval_seconds, cfg.manual_move_cooldown_seconds,
                                                        cfg.avoid_broker_seconds),
                          now);
  json broker_list = json::array();
  for (const auto& b : model.brokers)
    broker_list.push_back({{"id", b.id},
                           {"alive", b.alive},
                           {"excluded", b.excluded},
                           {"draining", b.draining},
                           {"slow", b.slow},
                           {"rack", b.rack},
                           {"weight", b.weight},
                           {"incomplete_window", incomplete.count(b.id) > 0}});
  pass["brokers"] = broker_list;
  pass["slow_brokers"] = st.last_slow;
  pass["in_flight"] = model.in_flight.size();
  pass["cooldown"] = model.cooldown.size();
  pass["avoid"] = model.avoid.size();
  auto loaded = st.goals ? st.goals->current() : plugins::load_report{};
  std::vector<const goals::goal*> goal_list;
  // With the balancer off, a pass runs only for a drain: the hard goals
  // still bound where drained partitions may go (their own moves are not made).
  for (const auto& g : loaded.goals)
    if (cfg.enabled || !execute || g.goal->hard())
      goal_list.push_back(g.goal.get());
  bool claimed = execute && in.contains("fence") && !st.superseded && st.epoch > 0;
  int64_t term = 0;
  auto failover = failover_now(st, &term);
  if (!failover.partitions.empty() || !failover.waiting.empty() || !failover.held.empty())
    run_failover(self, pass, model, goal_list, failover, term, claimed);
  auto plan = goals::make_plan(model, goal_list);
  if (!plan) {
    pass["errors"].push_back("plan: " + plan.error());
  } else {
    pass["plan"] = goals::plan_to_json(plan.value());
    std::set<std::string> listed;
    for (const auto& b : model.brokers)
      if (b.alive && !standing->removed.count(b.id))
        listed.insert(b.id);
    st.probe.plan_made(plan.value(), listed);
    // Goal moves follow DryRun; drain moves are made whenever this loop
    // holds the controllership (it claimed it for this pass); a failover
    // pass makes neither.
    bool act_goals = claimed && !cfg.dry_run && cfg.enabled && !failover_only;
    bool act = false;
    for (const auto& a : plan.value().actions) {
      bool go = a.goal == "drain" ? claimed && !failover_only : act_goals;
      act = act || go;
      // A SWAP's halves are sent as two independent moves; each names the
      // other so that one half done without the other shows in the pass.
      json row{{"type", a.type == goals::action_type::swap ? "SWAP" : "MOVE"},
               {"topic", a.topic}, {"partition", a.partition}, {"from", a.from}, {"to", a.to},
               {"goal", a.goal}, {"result", go ? "sent" : (execute && !failover_only ? "dry_run" : "plan_only")}};
      if (a.swap_with)
        row["swap_with"] = {{"topic", a.swap_with->topic}, {"partition", a.swap_with->partition}};
      pass["executed"].push_back(std::move(row));
      if (go)
        execute_move(self, a);
    }
    if (!plan.value().actions.empty())
      logger()->info("balancer.plan moves={} dry_run={} executing={} summary=\"{}\"", plan.value().actions.size(),
                     cfg.dry_run, act, plan.value().summary);
  }
  pass["duration_ms"] = util::wall_ms() - started;
  if (execute) {
    ++st.passes;
    st.probe.pass_run();
    st.last_pass = pass;
    if (pass.contains("failover") && pass["failover"].value("proposed", size_t{0}) > 0)
      st.last_failover = pass;
  }
  for (auto& w : st.plan_waiters)
    w.deliver(pass.dump(-1, ' ', false, json::error_handler_t::replace));  // a plugin's text may not be UTF-8
  st.plan_waiters.clear();
}

/// Re-reads the metadata log's dynamic settings (when there is an image):
/// settings.config = the configured section with them applied. Between
/// passes only.
void refresh_settings(self_ptr self) {
  auto& st = self->state;
  // Never while a pass runs: a pass plans and acts under one set of settings.
  if (!st.settings.image || st.pass_running)
    return;
  auto text = st.settings.image->balancer();
  if (*text == st.applied_settings)
    return;
  st.applied_settings = *text;
  st.settings.config = config::apply_balancer_settings(st.configured, json::parse(*text, nullptr, false));
  logger()->info("balancer.settings broker={} enabled={} dry_run={} interval_s={} settings={}",
                 st.settings.broker_id, st.settings.config.enabled, st.settings.config.dry_run,
                 st.settings.config.interval_seconds, *text);
}

json status_json(self_ptr self) {
  auto& st = self->state;
  refresh_settings(self);
  const auto& cfg = st.settings.config;
  json j{{"enabled", cfg.enabled},
         {"dry_run", cfg.dry_run},
         {"interval_seconds", cfg.interval_seconds},
         {"broker_id", st.settings.broker_id},
         {"controller", {{"epoch", st.epoch}, {"superseded", st.superseded}, {"raft", true}}},
         {"passes", st.passes},
         {"slow_brokers", st.last_slow},
         {"last_pass", st.last_pass}};
  j["failover"] = {{"shared_storage", st.settings.shared_storage},
                   {"wait_ms", st.settings.failover_wait_ms},
                   {"pending", st.failover_pending.size()},
                   {"last", st.last_failover}};
  if (st.superseded)
    j["controller"]["superseded_by"] = st.superseded_by;
  if (!st.not_controller.empty())
    j["controller"]["not_controller"] = st.not_controller;
  j["settings"] = config::effective_balancer_settings(
    cfg, config::throttle_with(st.settings.throttle_bytes_per_sec, json::parse(st.applied_settings, nullptr, false)));
  j["settings_source"] = st.settings.image ? "metadata log over configuration" : "configuration";
  // What the metadata log holds, as patched (cluster defaults such as
  // NumPartitions included); {} before any change.
  if (st.settings.image) {
    auto dynamic = json::parse(*st.settings.image->balancer(), nullptr, false);
    j["dynamic"] = dynamic.is_object() ? dynamic : json::object();
  }
  if (st.goals) {
    json names = json::array();
    for (const auto& g : st.goals->current().goals)
      names.push_back(g.name);
    j["goals"] = names;
  }
  return j;
}

/// Claims the controllership (succeeds on the Raft leader only, at its
/// term) and starts an executing pass. A loop pass whose claim fails waits
/// for its next interval; a failover pass (`failover_only`) for the next
/// failover check.
void claim_and_start(self_ptr self, bool failover_only) {
  auto& st = self->state;
  st.pass_running = true;
  self->request(st.cstate, local_timeout, claim_atom::value)
    .then(
      [self, failover_only](int64_t epoch) {
        auto& now = self->state;
        if (!now.not_controller.empty() || epoch != now.last_claimed)
          logger()->info("balancer.claimed broker={} epoch={}", now.settings.broker_id, epoch);
        now.epoch = epoch;
        now.last_claimed = epoch;
        now.not_controller.clear();
        start_pass(self, true, failover_only);
      },
      [self, failover_only](caf::error& e) {
        auto& now = self->state;
        now.pass_running = false;
        if (error_code_of(e) == "not_controller") {
          now.not_controller = caf::to_string(e);
          logger()->debug("balancer.not_controller broker={}", now.settings.broker_id);
        } else {
          // Retried at the next tick (an election or a slow commit).
          logger()->warn("balancer.claim_failed error=\"{}\"", caf::to_string(e));
        }
        if (!failover_only)
          self->delayed_send(self, std::chrono::seconds(now.settings.config.interval_seconds), tick_atom::value);
      });
}

balancer_actor::behavior_type balancer_fn(self_ptr self, balancer_settings settings,
                                          std::shared_ptr<plugins::goal_registry> goal_set,
                                          cluster_state_actor cstate, reassigner_actor reassigner) {
  auto& init = self->state;
  init.settings = std::move(settings);
  init.goals = std::move(goal_set);
  init.cstate = std::move(cstate);
  init.reassigner = std::move(reassigner);
  init.configured = init.settings.config;
  refresh_settings(self);
  const auto& cfg = init.settings.config;
  init.model = goals::load_model(goals::window_config{static_cast<size_t>(std::max(1, cfg.window)),
                                                      static_cast<size_t>(std::max(0, cfg.min_valid)),
                                                      cfg.percentile});
  if (cfg.enabled) {
    logger()->info("balancer.started broker={} interval_s={} dry_run={}", init.settings.broker_id,
                   cfg.interval_seconds, cfg.dry_run);
    self->delayed_send(self, std::chrono::seconds(std::min(cfg.interval_seconds, 2)), tick_atom::value);
  } else if (init.settings.image) {
    // Off for now; the metadata log may turn it on at runtime.
    self->delayed_send(self, settings_poll, tick_atom::value);
  }
  if (init.settings.shared_storage && init.settings.image && init.settings.raft) {
    logger()->info("balancer.failover_watch broker={} wait_ms={}", init.settings.broker_id,
                   init.settings.failover_wait_ms);
    self->state.probe.failover_watch();
    self->delayed_send(self, failover_poll, tick_atom::value, owner_atom::value);
  }
  return {
    [self](tick_atom) {
      auto& st = self->state;
      refresh_settings(self);
      bool drain = draining_any(st);
      if (!st.settings.config.enabled && !drain) {
        if (st.settings.image)  // turned off at runtime: watch for it to come back on (or a drain)
          self->delayed_send(self, settings_poll, tick_atom::value);
        return;
      }
      // A DryRun loop only previews, unless a drain needs it to act.
      bool preview = st.settings.config.dry_run && !drain;
      if (st.pass_running) {
        self->delayed_send(self, std::chrono::seconds(1), tick_atom::value);
        return;
      }
      if (!preview) {
        // Controllership is re-checked every pass: the term may have moved on.
        st.superseded = false;
        st.epoch = 0;
      }
      if (st.epoch > 0 || preview) {
        start_pass(self, true);
        return;
      }
      claim_and_start(self, false);
    },
    [self](tick_atom, owner_atom) {
      auto& st = self->state;
      self->delayed_send(self, failover_poll, tick_atom::value, owner_atom::value);
      const auto now = util::monotonic_ms();
      if (st.pass_running || (st.last_failover_start_ms > 0 && now - st.last_failover_start_ms < failover_retry_ms)
          || !failover_due(st))
        return;
      st.last_failover_start_ms = now;
      refresh_settings(self);
      st.superseded = false;
      st.epoch = 0;
      claim_and_start(self, true);
    },
    [self](step_atom, std::string& inputs, bool execute) {
      auto& st = self->state;
      st.pass_running = false;
      auto in = json::parse(inputs, nullptr, false);
      if (in.is_object())
        finish_pass(self, in, execute);
      // A failover pass ran between the loop's own passes: their tick is armed already.
      if (in.is_object() && in.value("failover_only", false))
        return;
      refresh_settings(self);
      if (execute && (st.settings.config.enabled || draining_any(st)))
        self->delayed_send(self, std::chrono::seconds(st.settings.config.interval_seconds), tick_atom::value);
      else if (execute && st.settings.image)
        self->delayed_send(self, settings_poll, tick_atom::value);
    },
    [self](step_atom, std::string& topic, int32_t partition, std::string& to, int32_t status, bool unknown,
           std::string& message) {
      auto& st = self->state;
      // The action this move carried out: a half of a SWAP counts as "swap".
      json* executed = nullptr;
      if (st.last_pass.is_object() && st.last_pass.contains("executed"))
        for (auto& e : st.last_pass["executed"])
          if (e["topic"] == topic && e["partition"] == partition && e["to"] == to)
            executed = &e;
      const bool swap_half = executed && executed->value("type", "") == "SWAP";
      if (status == 202 || status == 200)
        st.probe.action_queued(swap_half);
      else if (status == 409 && (message.find("stale_epoch") != std::string::npos
                                 || message.find("epoch_conflict") != std::string::npos))
        supersede(self, "move of " + topic + "/" + std::to_string(partition) + " refused: " + message);
      if (unknown)  // it may run: the next pass sees it among the sources' moves
        logger()->warn("balancer.move_unknown topic={} partition={} to={} status={} error=\"{}\"", topic, partition,
                       to, status, message);
      else if (status != 202)
        logger()->warn("balancer.move_refused topic={} partition={} to={} status={} error=\"{}\"", topic, partition,
                       to, status, message);
      if (executed) {
        (*executed)["result"] = status == 202 ? "queued" : unknown ? "unknown" : "refused";
        (*executed)["status"] = status;
        if (status != 202)
          (*executed)["error"] = message;
      }
    },
    [self](get_atom) -> std::string {
      return status_json(self).dump(-1, ' ', false, json::error_handler_t::replace);  // a plugin's text may not be UTF-8
    },
    [self](plan_atom) -> caf::result<std::string> {
      auto rp = self->make_response_promise<std::string>();
      self->state.plan_waiters.push_back(rp);
      if (!self->state.pass_running)
        start_pass(self, false);
      return rp;
    },
    [self](status_atom) -> std::string {
      auto j = status_json(self);
      j.erase("last_pass");
      j["failover"].erase("last");
      return j.dump(-1, ' ', false, json::error_handler_t::replace);
    },
  };
}

}  // namespace

balancer_actor spawn_balancer(caf::actor_system& sys, balancer_settings settings,
                              std::shared_ptr<plugins::goal_registry> goals, cluster_state_actor state,
                              reassigner_actor reassigner, registry_actor reg) {
  auto a = sys.spawn(balancer_fn, std::move(settings), std::move(goals), std::move(state), std::move(reassigner));
  enroll(reg, caf::actor_cast<caf::actor>(a), "balancer", "balancer");
  return a;
}

}  // namespace moonmq
