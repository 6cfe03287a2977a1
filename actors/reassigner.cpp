// The reassigner actor itself: its message handlers, spawn, the lookups, journal
// writes and peer calls every step uses, and the queue that admits moves. The
// steps are in reassigner_forward.cpp (to done) and reassigner_recovery.cpp.

#include "actors/reassigner.hpp"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "actors/reassigner_impl.hpp"
#include "config/dynamic.hpp"
#include "raft/types.hpp"
#include "storage/partition_log.hpp"

// Every continuation below looks its move up again by id (`run`, `row`)
// instead of capturing the pointer of the enclosing step, which may dangle
// once the move ended; the same names are deliberate.
#pragma GCC diagnostic ignored "-Wshadow"

namespace moonmq {
namespace reassigner_detail {
namespace {

/// Terminal journal rows are kept this long (then pruned), for
/// GET /admin/reassignments and `moonmqctl reassign verify`.
constexpr int64_t keep_finished_ms = 24LL * 3600 * 1000;
/// Copy progress is journaled at most this often (each write is an fsync);
/// a restart never resumes a copy, so the position only has to be close.
constexpr int64_t progress_every_ms = 1000;

}  // namespace

json row_json(const cluster::move_entry& e, const move_run* run, bool shared) {
  json j{{"move_id", e.move_id},         {"topic", e.tp.topic},
         {"partition", e.tp.partition},  {"from", e.from.value},
         {"to", e.to.value},             {"epoch", e.at.value},
         {"state", cluster::to_string(e.state)},
         {"bytes_copied", run ? std::max(run->bytes_copied, e.bytes_copied) : e.bytes_copied},
         {"bytes_total", run ? std::max(run->bytes_total, e.bytes_total) : e.bytes_total},
         {"copy_position", run ? std::max(run->position, e.copy_position) : e.copy_position},
         {"started_ms", e.started_ms},   {"updated_ms", e.updated_ms}};
  // "bytes": the partition's data is copied to the destination; "none":
  // shared storage, a metadata move (docs/admin-api.md).
  j["copy"] = shared ? "none" : "bytes";
  if (!e.origin.empty())
    j["origin"] = e.origin;
  if (!e.reason.empty())
    j["reason"] = e.reason;
  if (e.state == move_state::done)  // everything was sent: the estimate is moot
    j["bytes_total"] = j["bytes_copied"];
  if (!e.error.empty())
    j["error"] = e.error;
  else if (run && !run->note.empty())
    j["error"] = run->note;
  return j;
}

const cluster::move_entry* row_of(self_ptr self, const std::string& id) {
  return self->state.journal ? self->state.journal->find(id) : nullptr;
}

move_run* run_of(self_ptr self, const std::string& id) {
  auto it = self->state.running.find(id);
  return it == self->state.running.end() ? nullptr : &it->second;
}

std::optional<transport::cluster_peer> peer_of(self_ptr self, const std::string& id) {
  return self->state.settings.peers->find(id);
}

std::optional<partition_actor> local_partition(self_ptr self, const cluster::topic_partition& tp) {
  auto topics = self->state.catalog->get();
  auto t = topics->find(tp.topic);
  if (t == topics->end() || tp.partition < 0 || static_cast<size_t>(tp.partition) >= t->second.partitions.size())
    return std::nullopt;
  return t->second.partitions[static_cast<size_t>(tp.partition)];
}

std::string tp_path(const cluster::topic_partition& tp) {
  return "/cluster/partitions/" + tp.topic + "/" + std::to_string(tp.partition);
}

/// Journals `next` for move `id`; logs and returns false when refused.
bool journal_to(self_ptr self, const std::string& id, move_state next, const std::string& error,
                uint64_t owner_epoch) {
  auto& st = self->state;
  if (auto* run = run_of(self, id); run && st.journal->find(id)
                                     && (next == move_state::cutover || next == move_state::offsets
                                         || next == move_state::done)) {
    const auto* row = st.journal->find(id);
    if (row->state == move_state::copying || row->state == move_state::draining)
      (void)st.journal->record_progress(id, std::max(run->bytes_copied, row->bytes_copied),
                                        std::max({run->bytes_total, run->bytes_copied, row->bytes_total}),
                                        std::max(run->position, row->copy_position), util::wall_ms());
  }
  auto r = st.journal->transition(id, next, util::wall_ms(), error, owner_epoch);
  if (!r) {
    logger()->error("move.journal_failed move={} state={} error=\"{}\"", id, cluster::to_string(next),
                    r.err().message);
    return false;
  }
  // The journal logs every transition (move.<state> ...).
  return true;
}

void save_progress(self_ptr self, move_run& run, bool force) {
  auto now = util::wall_ms();
  if (!force && now - run.last_progress_ms < progress_every_ms)
    return;
  run.last_progress_ms = now;
  const auto* row = self->state.journal->find(run.id);
  if (!row || (row->state != move_state::copying && row->state != move_state::draining))
    return;
  run.bytes_total = std::max(run.bytes_total, run.bytes_copied);
  if (auto r = self->state.journal->record_progress(run.id, std::max(run.bytes_copied, row->bytes_copied),
                                                    std::max(run.bytes_total, row->bytes_total),
                                                    std::max(run.position, row->copy_position), now);
      !r)
    logger()->warn("move.progress_not_saved move={} error=\"{}\"", run.id, r.err().message);
}

int64_t effective_throttle(self_ptr self) {
  auto& st = self->state;
  return config::throttle_with(st.settings.throttle_bytes_per_sec,
                               json::parse(*st.owners->balancer(), nullptr, false));
}

void current_controller(self_ptr self, int64_t& epoch, std::string& controller) {
  // With Raft the move's owner changes are ordered by the log, and the
  // controller that accepted the move may have been replaced since: its
  // requests carry the term and leader this broker knows now, so a leader
  // change never strands a move on a stale epoch (a lagging view is
  // refused once and passes after the next heartbeat).
  if (!self->state.settings.raft_status)
    return;
  auto now = self->state.settings.raft_status->get();
  // An unknown leader cannot be named: then the move's own epoch is kept
  // (its holder is known only in memory, so after a restart it may be
  // refused until a leader is known, and the step is retried).
  if (now.term >= epoch && !now.leader.empty()) {
    epoch = now.term;
    controller = now.leader;
  }
}

/// Sends a request for move `id` to `peer`; its answer resumes `then`.
void call(self_ptr self, move_run& run, const std::string& peer_id, const std::string& method,
          const std::string& target, std::string body, bool control, answer_fn then) {
  if (control && self->state.settings.raft_status) {
    // No leader known (this broker restarted, or an election is running):
    // the request would carry no X-Controller-Id, or the old term, and be
    // refused (HTTP 400, or 409 stale_epoch at a broker already in the new
    // term). It waits for a leader, up to leader_wait, then goes as it is
    // and fails cleanly.
    auto now = util::wall_ms();
    if (self->state.settings.raft_status->get().leader.empty()) {
      if (run.leaderless_since_ms == 0)
        run.leaderless_since_ms = now;
      if (now - run.leaderless_since_ms < self->state.settings.leader_wait.count()) {
        schedule(self, run, leader_poll_ms,
                 [self, id = run.id, peer_id, method, target, body = std::move(body), then = std::move(then)]() mutable {
                   if (auto it = self->state.running.find(id); it != self->state.running.end())
                     call(self, it->second, peer_id, method, target, std::move(body), true, std::move(then));
                 });
        return;
      }
    }
    run.leaderless_since_ms = 0;
  }
  auto peer = peer_of(self, peer_id);
  run.on_answer = std::move(then);
  auto seq = ++run.seq;
  if (!peer) {
    json nothing;
    auto answer = std::move(run.on_answer);
    answer(0, nothing, "broker " + peer_id + " is not a configured peer");
    return;
  }
  const auto* row = row_of(self, run.id);
  auto epoch = control && row ? static_cast<int64_t>(row->at.value) : 0;
  auto controller = run.controller;
  if (control)
    current_controller(self, epoch, controller);
  auto handle = caf::actor_cast<reassigner_actor>(self);
  transport::call_peer(*peer, method, target, std::move(body), epoch, controller,
                       self->state.settings.peer_timeout,
                       [handle, id = run.id, seq](int status, json answer, std::string error) {
                         caf::anon_send(handle, step_atom::value, id, seq, static_cast<int32_t>(status),
                                        answer.is_null() ? std::string{} : answer.dump(), std::move(error));
                       });
}

/// Schedules `then` for move `id` after `delay` (0 = next message).
void schedule(self_ptr self, move_run& run, int64_t delay_ms, std::function<void()> then) {
  run.on_step = std::move(then);
  auto seq = ++run.seq;
  if (delay_ms <= 0)
    self->send(self, step_atom::value, run.id, seq);
  else
    self->delayed_send(self, milliseconds(delay_ms), step_atom::value, run.id, seq);
}

std::string answer_error(int status, const json& body, const std::string& error) {
  if (!error.empty())
    return error;
  if (body.is_object() && body.contains("message") && body["message"].is_string())
    return "HTTP " + std::to_string(status) + ": " + body["message"].get<std::string>();
  return "HTTP " + std::to_string(status);
}

// --- queue --------------------------------------------------------------------

void start_queued(self_ptr self) {
  auto& st = self->state;
  if (!st.journal)
    return;
  // Copies, not pointers: begin_copy rewrites the journal.
  std::vector<std::tuple<int64_t, std::string, uint64_t>> queued;  // started_ms, id, epoch
  auto logged = st.owners->moves();
  for (const auto& [id, e] : st.journal->entries()) {
    // A move starts once the log has it, unfinished (a cancel through the
    // log may have ended it; reconcile adopts that).
    auto m = logged->find(id);
    if (e.state == move_state::queued && !st.running.count(id) && m != logged->end()
        && !raft::finished_move_state(m->second.state))
      queued.emplace_back(e.started_ms, id, e.at.value);
  }
  std::sort(queued.begin(), queued.end());
  for (const auto& [started, id, epoch] : queued) {
    if (static_cast<int>(st.running.size()) >= st.settings.max_concurrent)
      break;
    auto& run = st.running[id];
    run.id = id;
    run.controller = st.holders[epoch];
    begin_copy(self, id);
  }
}

namespace {

caf::error coded(fault kind, const std::string& code, const std::string& message) {
  return make_coded_error(kind, code, message);
}

reassigner_actor::behavior_type reassigner_fn(self_ptr self, reassigner_settings settings,
                                              std::shared_ptr<catalog_view> catalog,
                                              std::shared_ptr<owner_view> owners, cluster_state_actor cstate,
                                              group_actor groups) {
  auto& init = self->state;
  init.settings = std::move(settings);
  init.catalog = std::move(catalog);
  init.owners = std::move(owners);
  init.cstate = std::move(cstate);
  init.groups = std::move(groups);
  auto journal = cluster::move_journal::open(init.settings.data_dir);
  if (journal) {
    init.journal.emplace(std::move(journal.value()));
    if (auto pruned = init.journal->prune_finished(util::wall_ms() - keep_finished_ms); pruned && *pruned > 0)
      logger()->info("move.pruned rows={}", *pruned);
    for (const auto& [id, e] : init.journal->entries())
      init.next_id = std::max<uint64_t>(init.next_id, static_cast<uint64_t>(e.started_ms));
    // The fence's holder names the controller of moves journaled under its
    // epoch; asked once, before any move resumes.
    caf::scoped_actor fence{self->system()};
    fence->request(init.cstate, local_timeout, get_atom::value)
      .receive([&](int64_t epoch, std::string& holder) { init.holders[static_cast<uint64_t>(epoch)] = holder; },
               [&](caf::error& e) { logger()->warn("move.fence_unavailable error=\"{}\"", caf::to_string(e)); });
    recover(self);
    start_queued(self);
    self->delayed_send(self, reconcile_every, tick_atom::value);
    if (init.settings.shared) {
      // A destination confirms its move as soon as it applies the cutover,
      // not on the next tick (docs/shared-storage.md "Moves and failover").
      init.owners->on_set([addr = self->address()] {
        if (auto me = caf::actor_cast<caf::actor>(addr))
          caf::anon_send(me, follow_atom::value);
      });
    }
  } else {
    init.open_error = journal.err().message;
    logger()->error("move.journal_unavailable error=\"{}\"", init.open_error);
  }
  return {
    [self](move_atom, std::string& topic, int32_t partition, std::string& to, int64_t at, std::string& controller,
           std::string& origin, std::string& reason, std::string& submission) -> caf::result<std::string> {
      auto& st = self->state;
      if (!st.journal)
        return make_error(errc::not_ready, "move journal unavailable: " + st.open_error);
      cluster::topic_partition tp{topic, partition};
      // A retry of a submission queued here: its move, whatever its state now.
      if (auto known = st.submissions.find(submission); !submission.empty() && known != st.submissions.end()) {
        const auto* row = st.journal->find(known->second);
        if (!row || row->tp != tp || row->to.value != to)
          return coded(fault::invalid, "invalid_request", "submission " + submission + " does not name a queued move of " + topic + "/" + std::to_string(partition) + " to broker " + to);
        return row_json(*row, run_of(self, row->move_id), st.settings.shared).dump();
      }
      if (topic.rfind("__", 0) == 0)
        return coded(fault::invalid, "internal_topic", "internal topics (" + topic + ") never move");
      if (!local_partition(self, tp))
        return coded(fault::not_found, "unknown_partition", "no partition " + topic + "/" + std::to_string(partition)
                                                 + " on broker " + st.settings.broker_id);
      auto route = st.owners->route(st.settings.broker_id, tp);
      if (route.where == partition_route::kind::remote)
        return coded(fault::misdirected, "not_owner", topic + "/" + std::to_string(partition) + " is owned by broker " + route.owner);
      if (route.where == partition_route::kind::unowned)
        return coded(fault::unavailable, "partition_offline", topic + "/" + std::to_string(partition)
                                                 + " has no owner in the metadata log; it cannot move");
      // A copy still sealed as a move's destination (its move has not
      // confirmed: its log may be incomplete) is not moved on.
      std::error_code ec;
      if (std::filesystem::exists(storage::partition_dir(st.settings.data_dir, topic, partition) + "/sealed", ec))
        return coded(fault::conflict, "partition_in_move", topic + "/" + std::to_string(partition) + " on broker "
                                                 + st.settings.broker_id
                                                 + " is a move's copy not yet confirmed; it moves on once confirmed");
      if (to == st.settings.broker_id)
        return coded(fault::invalid, "invalid_request", "broker " + to + " already owns " + topic + "/"
                                               + std::to_string(partition));
      if (!peer_of(self, to))
        return coded(fault::invalid, "unknown_broker", "broker " + to + " is not a peer of " + st.settings.broker_id);
      if (!cluster::valid_move_origin(origin))
        return coded(fault::invalid, "invalid_request", "a move's origin is \"operator\" or \"balancer\"");
      if (!cluster::valid_move_reason(reason))
        return coded(fault::invalid, "invalid_request", "a move's reason is at most "
                                               + std::to_string(cluster::max_move_reason_bytes)
                                               + " bytes of text without control characters");
      // Nothing moves onto a broker being drained or removed (docs/metadata.md "Drain and removal").
      if (auto standing = st.owners->standing(); standing->draining.count(to) || standing->removed.count(to))
        return coded(fault::conflict, "broker_draining", "broker " + to + " is "
                                               + (standing->removed.count(to) ? "removed" : "draining")
                                               + "; partitions move off it, not onto it");
      auto rp = self->make_response_promise<std::string>();
      // A move runs under a controller epoch; an operator's move on a
      // cluster that never had a controller claims the first one.
      auto queue = [self, rp, tp, to, origin, reason, submission](int64_t epoch, std::string holder) mutable {
        auto& st = self->state;
        auto now = util::wall_ms();
        cluster::move_entry e;
        e.move_id = st.settings.broker_id + "-" + std::to_string(std::max<uint64_t>(++st.next_id, now));
        st.next_id = std::max<uint64_t>(st.next_id, static_cast<uint64_t>(now));
        e.tp = tp;
        e.from = cluster::broker_id{st.settings.broker_id};
        e.to = cluster::broker_id{to};
        e.at = cluster::epoch{static_cast<uint64_t>(epoch)};
        e.started_ms = now;
        e.origin = origin;
        e.reason = reason;
        st.holders[static_cast<uint64_t>(epoch)] = holder;
        if (auto r = st.journal->add(e); !r) {
          rp.deliver(coded(r.err().code == cluster::errc::move_in_progress ? fault::conflict : fault::invalid,
                           cluster::to_string(r.err().code), r.err().message));
          return;
        }
        if (!submission.empty() && st.submissions.emplace(submission, e.move_id).second) {
          st.submission_order.push_back(submission);
          if (st.submission_order.size() > max_submissions) {
            st.submissions.erase(st.submission_order.front());
            st.submission_order.pop_front();
          }
        }
        // Answered once journaled; the move starts once the metadata log
        // has it (docs/cluster.md "Moves in the log").
        rp.deliver(row_json(*st.journal->find(e.move_id), nullptr, st.settings.shared).dump());
        propose_create(self, e.move_id);
      };
      if (at > 0) {
        queue(at, controller);
        return rp;
      }
      self->request(self->state.cstate, local_timeout, get_atom::value)
        .then(
          [self, rp, queue](int64_t epoch, std::string& holder) mutable {
            if (epoch > 0) {
              queue(epoch, holder);
              return;
            }
            self->request(self->state.cstate, local_timeout, claim_atom::value)
              .then([self, queue](int64_t claimed) mutable { queue(claimed, self->state.settings.broker_id); },
                    [rp](caf::error& e) mutable { rp.deliver(e); });
          },
          [rp](caf::error& e) mutable { rp.deliver(e); });
      return rp;
    },
    [self](cancel_atom, std::string& topic, int32_t partition) -> caf::result<std::string> {
      auto& st = self->state;
      const auto* row = st.journal ? st.journal->active_for(cluster::topic_partition{topic, partition}) : nullptr;
      if (!row) {
        // Not this broker's move: cancelled in the metadata log, where its
        // source (or, for a fenced source, the controller) follows it.
        auto moves = st.owners->moves();
        for (const auto& [id, m] : *moves) {
          // This broker's own moves are its journal's (one the journal
          // ended is ended, while the log catches up).
          if (m.tp.topic != topic || m.tp.partition != partition || raft::finished_move_state(m.state)
              || m.from == st.settings.broker_id)
            continue;
          if (m.state != "queued" && m.state != "copying")
            return coded(fault::conflict, "past_cutover", "move " + id + " is in " + m.state + ": past cutover it can only finish");
          auto rp = self->make_response_promise<std::string>();
          auto payload = move_payload(id, m.tp, m.from, m.to, "cancelled", {"queued", "copying"},
                                      "cancelled by an operator through " + st.settings.broker_id);
          propose_step(self, payload, [self, rp, id](const caf::error* e) mutable {
            auto now = logged_move(self, id);
            if (e && (error_code_of(*e) != "move_state_changed" || !now)) {
              rp.deliver(*e);
              return;
            }
            if (now->state != "cancelled") {
              rp.deliver(coded(fault::conflict, "past_cutover", "move " + id + " is in " + now->state + " now"));
              return;
            }
            rp.deliver(json{{"move_id", id}, {"topic", now->tp.topic}, {"partition", now->tp.partition},
                            {"from", now->from}, {"to", now->to}, {"state", now->state}, {"error", now->error}}
                         .dump());
          });
          return rp;
        }
        return coded(fault::not_found, "no_move", "no unfinished move of " + topic + "/" + std::to_string(partition));
      }
      if (cluster::is_past_cutover(row->state))
        return coded(fault::conflict, "past_cutover", "move " + row->move_id + " is in " + cluster::to_string(row->state)
                                            + ": past cutover it can only finish");
      auto id = row->move_id;
      if (auto* run = run_of(self, id))
        ++run->seq;  // answers still in flight are ignored from here on
      if (row->state == move_state::queued) {
        journal_to(self, id, move_state::cancelled, "cancelled by an operator");
        log_step_async(self, id, "cancelled", {"queued", "copying"}, "cancelled by an operator");
        st.running.erase(id);
      } else {
        end_before_cutover(self, id, move_state::cancelled, "cancelled by an operator");
      }
      return row_json(*st.journal->find(id), nullptr, st.settings.shared).dump();
    },
    [self](list_atom) -> std::string {
      auto& st = self->state;
      json rows = json::array();
      if (st.journal)
        for (const auto& [id, e] : st.journal->entries())
          rows.push_back(row_json(e, run_of(self, id), st.settings.shared));
      return rows.dump();
    },
    [self](step_atom, std::string& id, int64_t seq) {
      auto* run = run_of(self, id);
      if (!run || run->seq != seq || !run->on_step)
        return;
      auto next = std::move(run->on_step);
      run->on_step = nullptr;
      next();
    },
    [self](step_atom, std::string& id, int64_t seq, int32_t status, std::string& body, std::string& error) {
      if (seq == -1) {  // a destination's answer to the confirm of an orphaned move
        if (auto it = self->state.orphans.find(id); it != self->state.orphans.end())
          it->second.in_flight = false;
        if (status != 200)
          logger()->warn("move.orphan_confirm_failed move={} status={} error=\"{}\"", id, status, error);
        return;
      }
      auto* run = run_of(self, id);
      if (!run || run->seq != seq || !run->on_answer)
        return;
      auto next = std::move(run->on_answer);
      run->on_answer = nullptr;
      auto parsed = body.empty() ? json(nullptr) : json::parse(body, nullptr, false);
      if (parsed.is_discarded())
        parsed = nullptr;
      next(status, parsed, error);
    },
    [self](copy_atom, std::string& id, int64_t gen) { copy_throttle_over(self, id, gen); },
    [self](copy_atom, std::string& id, int64_t gen, int64_t from, int32_t status, std::string& body,
           std::string& error) { copy_answer(self, id, gen, from, status, body, error); },
    [self](tick_atom) {
      reconcile(self);
      self->delayed_send(self, reconcile_every, tick_atom::value);
    },
    [self](follow_atom) {
      confirm_own_moves(self);
      complete_confirmed_moves(self);
    },
    [self](status_atom) -> std::string {
      auto& st = self->state;
      json j{{"broker_id", st.settings.broker_id},
             {"running", st.running.size()},
             {"max_concurrent", st.settings.max_concurrent},
             {"batch_bytes", st.settings.batch_bytes},
             {"copy_window", st.settings.copy_window},
             {"throttle_bytes_per_sec", effective_throttle(self)}};
      if (!st.journal) {
        j["error"] = st.open_error;
        return j.dump();
      }
      json moves = json::array();
      for (const auto& e : st.journal->unfinished())
        moves.push_back(row_json(e, run_of(self, e.move_id), st.settings.shared));
      j["unfinished"] = moves;
      j["journal"] = st.journal->file();
      return j.dump();
    },
  };
}

}  // namespace
}  // namespace reassigner_detail

std::string check_move_journal(const std::string& data_dir) {
  auto journal = cluster::move_journal::open(data_dir);
  return journal ? std::string{} : journal.err().message;
}

reassigner_actor spawn_reassigner(caf::actor_system& sys, reassigner_settings settings,
                                  std::shared_ptr<catalog_view> catalog, std::shared_ptr<owner_view> owners,
                                  cluster_state_actor state, group_actor groups, registry_actor reg) {
  auto a = sys.spawn<caf::detached>(reassigner_detail::reassigner_fn, std::move(settings), std::move(catalog),
                                    std::move(owners), std::move(state), std::move(groups));
  enroll(reg, caf::actor_cast<caf::actor>(a), "reassigner", "reassigner");
  return a;
}

}  // namespace moonmq
