#include "actors/move_destination.hpp"

#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "cluster/move_journal.hpp"
#include "raft/types.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

using cluster::move_answer;
using answer_promise = caf::typed_response_promise<move_answer>;
using fail_fn = std::function<void(caf::error&)>;

/// The latest ensure a destination received for a partition.
struct ensure_mark {
  std::string move_id;
  std::string from;     ///< its source
  int64_t attempt = 0;  ///< its attempt (the source's clock: rises across the source's moves too)
  bool cleaned = false; ///< that move's cleanup came since: none of its ensures may run
};

struct move_destination_state {
  move_destination_settings settings;
  std::shared_ptr<catalog_view> catalog;
  std::shared_ptr<owner_view> owners;
  cluster_state_actor state;
  broker_actor broker;
  group_actor groups;
  int64_t requests = 0;  ///< steps asked of this actor
  int64_t failed = 0;    ///< steps answered with an error
  /// The latest ensure received per partition (ensure_mark); one entry per
  /// partition a move ever copied to this broker, in memory.
  std::map<std::pair<std::string, int32_t>, ensure_mark> ensures;
  static inline const char* name = "move_destination";
};

using self_ptr = move_destination_actor::stateful_pointer<move_destination_state>;

std::shared_ptr<spdlog::logger> logger() { return log::get("reassigner"); }

std::string name_of(const std::string& topic, int32_t partition) { return topic + "/" + std::to_string(partition); }

/// A step's promise with its error path counted.
/// Copies share one request: exactly one of them answers it (each path
/// below ends in one answer or one failure).
struct step {
  self_ptr self;
  mutable answer_promise rp;

  void answer(move_answer a) const { rp.deliver(std::move(a)); }
  void fail(caf::error e) const {
    ++self->state.failed;
    rp.deliver(std::move(e));
  }
  fail_fn failer() const {
    return [s = *this](caf::error& e) { s.fail(std::move(e)); };
  }
};

step begin(self_ptr self) {
  ++self->state.requests;
  return step{self, self->make_response_promise<move_answer>()};
}

/// This broker's copy of (topic, partition), if it has one.
std::optional<partition_actor> local_partition(self_ptr self, const std::string& topic, int32_t partition) {
  auto topics = self->state.catalog->get();
  auto t = topics->find(topic);
  if (t == topics->end() || partition < 0 || static_cast<size_t>(partition) >= t->second.partitions.size())
    return std::nullopt;
  return t->second.partitions[static_cast<size_t>(partition)];
}

/// Starts a step on this broker's copy of (topic, partition):
/// `run(step, copy)`, or unknown_partition when it has none.
template <class F>
caf::result<move_answer> on_copy(self_ptr self, const std::string& topic, int32_t partition, F run) {
  auto s = begin(self);
  if (auto found = local_partition(self, topic, partition))
    run(s, *found);
  else
    s.fail(make_error(errc::unknown_partition, "no local partition " + name_of(topic, partition)));
  return s.rp;
}

/// True when this broker's table names another broker as the owner: only
/// then may a move write over its copy.
bool owned_elsewhere(self_ptr self, const std::string& topic, int32_t partition) {
  auto owners = self->state.owners->get();
  auto it = owners->find(cluster::topic_partition{topic, partition});
  return it != owners->end() && it->second != self->state.settings.broker_id;
}

caf::error owns_it(self_ptr self, const std::string& topic, int32_t partition) {
  return make_coded_error(fault::conflict, "destination_owns_partition",
                          "broker " + self->state.settings.broker_id + " owns " + name_of(topic, partition)
                            + " itself; a move may only write over a copy owned elsewhere");
}

caf::error owner_changed(const std::string& topic, int32_t partition, const std::string& owner) {
  return make_coded_error(fault::conflict, "owner_changed",
                          name_of(topic, partition) + " is owned by " + owner + " now; this move has ended");
}

caf::error not_ready(std::string message) {
  return make_coded_error(fault::unavailable, "not_ready", std::move(message));
}

/// The copy's end must be `expected` (the source's sealed end).
caf::error end_mismatch(int64_t end, int64_t expected) {
  return make_offset_mismatch(end, "log end is " + std::to_string(end) + ", the source's is "
                                     + std::to_string(expected));
}

void ask_bounds(self_ptr self, const partition_actor& part, std::function<void(int64_t, int64_t)> ok, fail_fn fail) {
  self->request(part, self->state.settings.timeout, bounds_atom::value)
    .then([ok](int64_t lo, int64_t hi, int64_t) { ok(lo, hi); }, [fail](caf::error& e) { fail(e); });
}

/// Seals (`sealed`) or unseals the copy, then `then(log end)`.
void set_seal(self_ptr self, const partition_actor& part, bool sealed, bool durable, std::function<void(int64_t)> then,
              fail_fn fail) {
  auto on_ok = [then](int64_t end) { then(end); };
  auto on_err = [fail](caf::error& e) { fail(e); };
  if (durable)
    self->request(part, self->state.settings.timeout, seal_atom::value, sealed, true).then(on_ok, on_err);
  else
    self->request(part, self->state.settings.timeout, seal_atom::value, sealed).then(on_ok, on_err);
}

/// Names each (partition, owner) of `owners` in the cluster state, one
/// after the other, then `done`.
void set_owners(self_ptr self, const std::string& topic,
                std::shared_ptr<std::vector<std::pair<int32_t, std::string>>> owners, size_t i, int64_t at,
                std::function<void()> done, fail_fn fail) {
  if (i >= owners->size()) {
    done();
    return;
  }
  auto [partition, owner] = (*owners)[i];
  // A row the table already holds is not written again: with the metadata
  // log every partition of a logged topic has its owner from the entry that
  // created it, so an ensure proposes nothing for them.
  if (auto now = self->state.owners->get(); now->count({topic, partition}) && now->at({topic, partition}) == owner) {
    set_owners(self, topic, owners, i + 1, at, done, fail);
    return;
  }
  self->request(self->state.state, self->state.settings.timeout, owner_atom::value, topic, partition, owner, at)
    .then([self, topic, owners, i, at, done, fail](bool) { set_owners(self, topic, owners, i + 1, at, done, fail); },
          [fail](caf::error& e) { fail(e); });
}

// --- step 1: ensure -------------------------------------------------------------

/// Refuses with conflict stale_ensure.
caf::error stale_ensure(const std::string& topic, int32_t partition, const cluster::move_ensure& req,
                        const std::string& why) {
  return make_coded_error(fault::conflict, "stale_ensure",
                          "ensure of move " + req.move_id + " (attempt " + std::to_string(req.attempt) + ") for "
                            + name_of(topic, partition) + " is stale: " + why);
}

/// Why an ensure arriving now must not run, or "" when it may (never for a
/// request without a move id, from a source of an earlier version):
///  - the metadata log has ended its move (rolling back, failed, cancelled,
///    done);
///  - this move's cleanup came, or an attempt of it not below this one;
///  - an ensure from the same source, of a later move, with a higher attempt
///    came (the source's attempts rise across its moves).
/// Ensures from another source are ordered by the log only: one unfinished
/// move per partition, so the earlier move has ended there by the time a
/// later one sends its ensure.
std::string stale_reason(self_ptr self, const std::string& topic, int32_t partition, const cluster::move_ensure& req) {
  if (req.move_id.empty())
    return {};
  auto moves = self->state.owners->moves();
  if (auto m = moves->find(req.move_id); m != moves->end()) {
    const auto& st = m->second.state;
    if (st == "rolling_back" || st == "failed" || st == "cancelled" || st == "done")
      return "the metadata log has the move " + st;
  }
  auto it = self->state.ensures.find({topic, partition});
  if (it == self->state.ensures.end())
    return {};
  const auto& latest = it->second;
  if (latest.move_id == req.move_id && latest.cleaned)
    return "its cleanup came";
  if (latest.move_id == req.move_id && req.attempt <= latest.attempt)
    return "attempt " + std::to_string(latest.attempt) + " came";
  if (latest.move_id != req.move_id && latest.from == req.from && req.attempt <= latest.attempt)
    return "move " + latest.move_id + " from the same source came later";
  return {};
}

/// True, after failing `s` with stale_ensure, when an ensure running since
/// `req` arrived must stop before its next step: another ensure (of any
/// move) or its move's cleanup came since, or this broker owns the
/// partition now. So a late ensure never resets or seals after a later
/// one answered, and never touches a copy that serves.
bool superseded(self_ptr self, const step& s, const std::string& topic, int32_t partition,
                const cluster::move_ensure& req) {
  if (auto owners = self->state.owners->get(); owners->count({topic, partition})
                                               && owners->at({topic, partition}) == self->state.settings.broker_id) {
    s.fail(owns_it(self, topic, partition));
    return true;
  }
  if (req.move_id.empty())
    return false;
  const auto& latest = self->state.ensures[{topic, partition}];
  if (latest.move_id == req.move_id && latest.attempt == req.attempt && !latest.cleaned)
    return false;
  s.fail(stale_ensure(topic, partition, req, "a later ensure or its move's cleanup came while it ran"));
  return true;
}

/// The copy exists now: reset it to the source's log start (local storage)
/// and seal it durably.
void prepare_copy(self_ptr self, step s, const std::string& topic, int32_t partition,
                  const cluster::move_ensure& req) {
  if (superseded(self, s, topic, partition, req))
    return;
  const int64_t start = req.log_start_offset;
  auto now = self->state.catalog->get();
  auto created = now->find(topic);
  if (created == now->end() || static_cast<size_t>(partition) >= created->second.partitions.size()) {
    s.fail(not_ready("the topic is not published yet; retry"));
    return;
  }
  auto part = created->second.partitions[static_cast<size_t>(partition)];
  const bool shared = self->state.settings.shared;
  // Durable: still sealed after a restart. With shared storage there is
  // nothing to reset (the partition's data is the shared directory's
  // chain) and nothing will be copied; the seal alone keeps this broker
  // from taking writes once its image names it owner at the cutover,
  // until the move confirms.
  auto sealed = [s, topic, partition, start, shared](int64_t end) {
    if (shared)
      logger()->info("move.ensured topic={} partition={} copy=none", topic, partition);
    else
      logger()->info("move.ensured topic={} partition={} log_start={}", topic, partition, start);
    move_answer a;
    a.log_start_offset = start;
    a.log_end_offset = end;
    a.copy_none = shared;
    s.answer(std::move(a));
  };
  if (shared) {
    set_seal(self, part, true, true, sealed, s.failer());
    return;
  }
  self->request(part, self->state.settings.timeout, reset_atom::value, start)
    .then(
      [self, part, sealed, s, topic, partition, req](int64_t) {
        if (!superseded(self, s, topic, partition, req))
          set_seal(self, part, true, true, sealed, s.failer());
      },
      [s](caf::error& e) { s.fail(std::move(e)); });
}

caf::result<move_answer> ensure(self_ptr self, const std::string& topic, int32_t partition,
                                const cluster::move_ensure& req, int64_t at) {
  auto s = begin(self);
  if (auto why = stale_reason(self, topic, partition, req); !why.empty()) {
    s.fail(stale_ensure(topic, partition, req, why));
    return s.rp;
  }
  if (!req.move_id.empty())
    self->state.ensures[{topic, partition}] = ensure_mark{req.move_id, req.from, req.attempt, false};
  auto topics = self->state.catalog->get();
  auto t = topics->find(topic);
  int32_t had = t == topics->end() ? 0 : static_cast<int32_t>(t->second.partitions.size());
  if (partition < had && !owned_elsewhere(self, topic, partition)) {
    s.fail(owns_it(self, topic, partition));
    return s.rp;
  }
  // Shared storage: the moving partition must still be the source's here.
  // Otherwise the move is stale (its source was frozen and its partition
  // failed over, the log ended the move), and naming the source owner
  // below would take the partition from a live owner that was never
  // sealed: it could go on acknowledging appends the source's takeover
  // never sees (docs/shared-storage.md "One writer per epoch").
  if (self->state.settings.shared && partition < had) {
    auto now = self->state.owners->get();
    auto it = now->find(cluster::topic_partition{topic, partition});
    if (it != now->end() && !it->second.empty() && it->second != req.from) {
      s.fail(make_coded_error(fault::conflict, "owner_changed",
                              name_of(topic, partition) + " is owned by " + it->second + " here, not by the source "
                                + req.from + "; this move has ended"));
      return s.rp;
    }
  }
  // Partitions this ensure creates are owned where the source says they
  // are; the moving one by the source until the move confirms.
  auto owners = std::make_shared<std::vector<std::pair<int32_t, std::string>>>();
  for (int32_t q = had; q < req.partitions; ++q)
    if (q != partition)
      owners->emplace_back(q, req.owners.count(q) ? req.owners.at(q) : req.from);
  owners->emplace_back(partition, req.from);
  auto prepare = [self, s, topic, partition, req, owners, at] {
    set_owners(self, topic, owners, 0, at, [self, s, topic, partition, req] {
      prepare_copy(self, s, topic, partition, req);
    }, s.failer());
  };
  auto on_err = [s](caf::error& e) { s.fail(std::move(e)); };
  const auto timeout = self->state.settings.timeout;
  if (had == 0)
    self->request(self->state.broker, timeout, create_atom::value, topic, req.partitions,
                  req.config.is_object() ? req.config.dump() : std::string{})
      .then([prepare](bool) { prepare(); }, on_err);
  else if (had < req.partitions)
    self->request(self->state.broker, timeout, grow_atom::value, topic, req.partitions)
      .then([prepare](int32_t) { prepare(); }, on_err);
  else
    prepare();
  return s.rp;
}

// --- steps 2 and 4: append --------------------------------------------------------

void append(self_ptr self, step s, const partition_actor& part, int64_t expected, std::string& batches, bool sync) {
  if (self->state.settings.shared) {
    s.fail(make_coded_error(fault::conflict, "shared_storage",
                            "a move copies nothing with shared storage: the destination reads the shared directory"));
    return;
  }
  // With the metadata log the destination is named owner at cutover, before
  // the drain's appends: there the durable seal of its copy (set by ensure,
  // lifted by confirm) is what allows them, and the partition enforces it.
  // The partition applies the batches at exactly `expected`, holding them
  // while an earlier batch of the source's window is still on its way.
  self->request(part, self->state.settings.timeout, copy_atom::value, expected, std::move(batches), sync)
    .then(
      [s](int64_t new_end) {
        move_answer a;
        a.log_end_offset = new_end;
        s.answer(std::move(a));
      },
      [s, expected](caf::error& e) {
        int64_t start = 0, end = 0;
        if (out_of_range_bounds(e, start, end))
          s.fail(make_offset_mismatch(end, "log end is " + std::to_string(end) + ", not " + std::to_string(expected)));
        else
          s.fail(std::move(e));
      });
}

// --- step 6: confirm ---------------------------------------------------------------

/// The confirm's refusal of a conditional owner entry: not_ready (retry)
/// when the epoch moved by an earlier try of ours, else owner_changed.
void owner_entry_refused(self_ptr self, step s, const std::string& topic, int32_t partition, caf::error& e) {
  if (error_code_of(e) != "owner_epoch_changed") {
    s.fail(std::move(e));
    return;
  }
  auto now = self->state.owners->owner_and_epoch({topic, partition}).first;
  if (now == self->state.settings.broker_id)  // bumped by an earlier try of ours: retry at the new epoch
    s.fail(not_ready("owner epoch moved on; retry"));
  else
    s.fail(owner_changed(topic, partition, now));
}

/// Lifts the seal of a confirmed copy and answers it (`again`: an earlier
/// try of this confirm took effect).
void unseal_confirmed(self_ptr self, step s, const partition_actor& part, const std::string& topic, int32_t partition,
                      const std::string& detail, bool again) {
  set_seal(self, part, false, false, [self, s, topic, partition, detail, again](int64_t end) {
    logger()->info("move.confirmed topic={} partition={} log_end={}{}", topic, partition, end, detail);
    move_answer a;
    a.owner = self->state.settings.broker_id;
    a.log_end_offset = end;
    a.already_confirmed = again;
    s.answer(std::move(a));
  }, s.failer());
}

/// Proposes this broker's conditional owner entry at `epoch`, then `then`.
void take_ownership(self_ptr self, step s, const std::string& topic, int32_t partition, int64_t at, int64_t epoch,
                    std::function<void()> then) {
  self->request(self->state.state, self->state.settings.timeout, owner_atom::value, topic, partition,
                self->state.settings.broker_id, at, epoch)
    .then([then](bool) { then(); },
          [self, s, topic, partition](caf::error& e) { owner_entry_refused(self, s, topic, partition, e); });
}

/// Shared storage: nothing was copied, so nothing is fsynced and no log
/// start is taken (the chain's is right). The partition, taken over at the
/// cutover's epoch and sealed since, must end at the source's sealed end;
/// the conditional owner entry then bumps the epoch (the worker takes the
/// partition over again there: io_worker.cpp follow_image), the end is
/// checked once more at the new epoch, and only then is the seal lifted. A
/// wrong end leaves it sealed.
void confirm_shared(self_ptr self, step s, const std::string& topic, int32_t partition, partition_actor part,
                    int64_t at, int64_t expected, int64_t cutover_epoch) {
  ask_bounds(self, part, [self, s, topic, partition, part, at, expected, cutover_epoch](int64_t, int64_t end) {
    if (end != expected) {
      s.fail(end_mismatch(end, expected));
      return;
    }
    auto [owner, epoch] = self->state.owners->owner_and_epoch({topic, partition});
    // The entry expects the cutover's epoch, never a later one: an earlier
    // try of this confirm may have applied and this broker be taking writes
    // at the epoch after it, which a second entry would end under them.
    // Refused then: the source retries and is answered "already
    // confirmed". (This broker's own confirm in place, reassigner_log.cpp
    // confirm_in_place, stays at the cutover's epoch and ends the move
    // `done`; a request after it is answered by confirm.)
    if (cutover_epoch > 0)
      epoch = cutover_epoch;
    if (owner != self->state.settings.broker_id) {
      s.fail(owner_changed(topic, partition, owner));
      return;
    }
    take_ownership(self, s, topic, partition, at, epoch, [self, s, topic, partition, part, expected]() {
      // Applied here: the next request on the partition takes it over at
      // the new epoch before it is answered.
      ask_bounds(self, part, [self, s, topic, partition, part, expected](int64_t, int64_t taken_end) {
        if (taken_end != expected) {
          s.fail(end_mismatch(taken_end, expected));
          return;
        }
        unseal_confirmed(self, s, part, topic, partition, " copy=none", false);
      }, s.failer());
    });
  }, s.failer());
}

/// A confirm after an earlier try of this very move took effect (this
/// broker owns the partition at a later epoch than the cutover's) is
/// answered already_confirmed; true when `s` was answered so.
bool confirmed_before(self_ptr self, step s, const std::string& topic, int32_t partition, const partition_actor& part,
                      const std::string& from, int64_t cutover_epoch) {
  // The partition may have taken writes since the earlier try: its end is
  // past the sealed end. The seal is lifted again (idempotent) in case the
  // earlier try stopped between its entry and its unseal. Only for this
  // very move (its source, this destination, that cutover epoch; not taken
  // back), and only while no other move of the partition runs: its seal
  // must not be lifted here.
  const auto& me = self->state.settings.broker_id;
  const bool shared = self->state.settings.shared;
  auto [owner, epoch] = self->state.owners->owner_and_epoch({topic, partition});
  bool this_move = false, other_open = false, done_in_place = false;
  int64_t sealed_end = -1;  // as the log recorded it (shared storage: from the cutover on)
  const auto moves = self->state.owners->moves();
  for (const auto& [mid, m] : *moves) {
    if (m.tp.topic != topic || m.tp.partition != partition)
      continue;
    if (m.from == from && m.to == me && m.epoch == cutover_epoch
        && (m.state == "cutover" || m.state == "offsets" || m.state == "done")) {
      this_move = true;
      sealed_end = m.end;
      // Shared storage: this broker's own `done` at the cutover's epoch
      // (reassigner_log.cpp confirm_in_place).
      done_in_place = shared && m.state == "done" && owner == me && epoch == cutover_epoch;
    } else if (!raft::finished_move_state(m.state)) {
      other_open = true;
    }
  }
  if (!this_move || other_open
      || !(done_in_place || cluster::destination_confirmed(me, static_cast<uint64_t>(cutover_epoch), owner,
                                                           cluster::journal_epoch(epoch))))
    return false;
  const std::string detail = " epoch=" + std::to_string(epoch) + " again=true";
  if (!shared || sealed_end < 0) {
    unseal_confirmed(self, s, part, topic, partition, detail, true);
    return true;
  }
  // Shared storage: the destination may have confirmed by itself
  // (reassigner_log.cpp confirm_own_moves), and its own end check at the
  // new epoch may have failed or not run yet. The seal is lifted only over
  // a log that holds every sealed record.
  ask_bounds(self, part, [self, s, part, topic, partition, sealed_end, detail](int64_t, int64_t end) {
    if (end < sealed_end) {
      s.fail(make_offset_mismatch(end, "log end is " + std::to_string(end) + ", the sealed end "
                                         + std::to_string(sealed_end)));
      return;
    }
    unseal_confirmed(self, s, part, topic, partition, detail, true);
  }, s.failer());
  return true;
}

void confirm(self_ptr self, step s, const partition_actor& part, const std::string& topic, int32_t partition,
             const cluster::move_confirm& req, int64_t at) {
  const auto& me = self->state.settings.broker_id;
  const int64_t expected = req.log_end_offset;
  // The source's log start (DeleteRecords); -1 (absent) from a confirm sent
  // in the source's place without it, which leaves the copy's own.
  const int64_t log_start = req.log_start_offset;
  // The cutover's epoch (0: absent from an older source's confirm).
  const int64_t cutover_epoch = req.owner_epoch;
  // This broker is owner since the cutover's entry. Not yet applied here:
  // retry. Another owner: the partition moved on after an earlier try of
  // this confirm took effect (its answer was lost), and nothing may be
  // written over that.
  auto r = self->state.owners->route(me, {topic, partition});
  if (r.where == partition_route::kind::unowned || (r.where == partition_route::kind::remote && r.owner == req.from)) {
    s.fail(not_ready("broker " + me + " has not applied the cutover of " + name_of(topic, partition) + " yet; retry"));
    return;
  }
  if (r.where == partition_route::kind::remote) {
    s.fail(owner_changed(topic, partition, r.owner));
    return;
  }
  // Owner at a later epoch than the cutover's: this broker's conditional
  // owner entry applied, so an earlier try of this confirm (or the
  // controller's, in a fenced source's place) succeeded.
  if (cutover_epoch > 0 && confirmed_before(self, s, topic, partition, part, req.from, cutover_epoch))
    return;
  if (self->state.settings.shared) {
    confirm_shared(self, s, topic, partition, part, at, expected, cutover_epoch);
    return;
  }
  // Owner since the cutover (checked above). Before taking writes it bumps
  // the owner epoch by a conditional entry at the epoch it holds the
  // partition at: should the source have taken the partition back
  // meanwhile (it gave up waiting, docs/metadata.md "Owner epochs"), this
  // entry is refused and the copy stays sealed. Exactly one of the two
  // applies, in log order.
  auto own = [self, s, topic, partition, part, at]() {
    auto [owner, epoch] = self->state.owners->owner_and_epoch({topic, partition});
    if (owner != self->state.settings.broker_id) {
      s.fail(owner_changed(topic, partition, owner));
      return;
    }
    take_ownership(self, s, topic, partition, at, epoch,
                   [self, s, part, topic, partition] { unseal_confirmed(self, s, part, topic, partition, "", false); });
  };
  // An empty copy request fsyncs the copy and answers its end.
  self->request(part, self->state.settings.timeout, copy_atom::value, std::string{}, true)
    .then(
      [self, s, part, expected, log_start, own](int64_t end) {
        if (end != expected) {
          s.fail(end_mismatch(end, expected));
          return;
        }
        if (log_start < 0) {
          own();
          return;
        }
        // Durable before ownership is taken: the copy never serves what the
        // source deleted.
        self->request(part, self->state.settings.timeout, delete_records_atom::value, log_start, true)
          .then([own](int64_t) { own(); }, [s](caf::error& e) { s.fail(std::move(e)); });
      },
      [s](caf::error& e) { s.fail(std::move(e)); });
}

// --- cleanup -------------------------------------------------------------------------

void cleanup(self_ptr self, step s, const partition_actor& part, const std::string& topic, int32_t partition,
             const cluster::move_cleanup& req) {
  if (!owned_elsewhere(self, topic, partition)) {
    s.fail(owns_it(self, topic, partition));
    return;
  }
  // A cleanup that arrives after a later move's ensure (it was retried, or
  // delayed) would drop that move's copy: refused. One of its own move
  // stops that move's ensures, running or late.
  if (!req.move_id.empty()) {
    auto& latest = self->state.ensures[{topic, partition}];
    if (!latest.move_id.empty() && latest.move_id != req.move_id) {
      s.fail(make_coded_error(fault::conflict, "stale_cleanup",
                              "the copy of " + name_of(topic, partition) + " is move " + latest.move_id
                                + "'s now, not " + req.move_id + "'s; it is kept"));
      return;
    }
    latest.move_id = req.move_id;
    latest.cleaned = true;
  }
  auto cleaned = [s, topic, partition, shared = self->state.settings.shared](int64_t end) {
    logger()->info("move.cleaned topic={} partition={}{}", topic, partition, shared ? " copy=none" : "");
    move_answer a;
    a.log_end_offset = end;
    s.answer(std::move(a));
  };
  if (self->state.settings.shared) {
    // Shared storage: the partition's files are every later epoch's history
    // (a destination that confirmed in place and was then taken back may
    // have written at the cutover's epoch: the source's takeover read
    // them): only the seal is lifted.
    set_seal(self, part, false, false, cleaned, s.failer());
    return;
  }
  // The source's own entries name the owner (the request's "owner" is not
  // written here: a late write could undo a later entry).
  ask_bounds(self, part, [self, s, part, cleaned](int64_t lo, int64_t) {
    self->request(part, self->state.settings.timeout, reset_atom::value, lo)
      .then([self, s, part, cleaned](int64_t) { set_seal(self, part, false, false, cleaned, s.failer()); },
            [s](caf::error& e) { s.fail(std::move(e)); });
  }, s.failer());
}

move_destination_actor::behavior_type move_destination_fn(self_ptr self, move_destination_settings settings,
                                                          std::shared_ptr<catalog_view> catalog,
                                                          std::shared_ptr<owner_view> owners,
                                                          cluster_state_actor state, broker_actor broker,
                                                          group_actor groups) {
  auto& st = self->state;
  st.settings = std::move(settings);
  st.catalog = std::move(catalog);
  st.owners = std::move(owners);
  st.state = std::move(state);
  st.broker = std::move(broker);
  st.groups = std::move(groups);
  return {
    [self](ensure_atom, std::string& topic, int32_t partition, cluster::move_ensure& req, int64_t at) {
      return ensure(self, topic, partition, req, at);
    },
    [self](copy_atom, std::string& topic, int32_t partition, int64_t expected, std::string& batches, bool sync) {
      return on_copy(self, topic, partition,
                     [&](step s, const partition_actor& part) { append(self, s, part, expected, batches, sync); });
    },
    [self](merge_atom, cluster::move_offsets& pushed) -> caf::result<int32_t> {
      ++self->state.requests;
      auto rp = self->make_response_promise<int32_t>();
      self->request(self->state.groups, self->state.settings.timeout, merge_atom::value, pushed.topic,
                    pushed.partition, pushed.offsets.dump())
        .then([rp](int32_t merged) mutable { rp.deliver(merged); },
              [self, rp](caf::error& e) mutable {
                ++self->state.failed;
                rp.deliver(std::move(e));
              });
      return rp;
    },
    [self](confirm_atom, std::string& topic, int32_t partition, cluster::move_confirm& req, int64_t at) {
      return on_copy(self, topic, partition,
                     [&](step s, const partition_actor& part) { confirm(self, s, part, topic, partition, req, at); });
    },
    [self](cleanup_atom, std::string& topic, int32_t partition, cluster::move_cleanup& req, int64_t) {
      return on_copy(self, topic, partition,
                     [&](step s, const partition_actor& part) { cleanup(self, s, part, topic, partition, req); });
    },
    [self](status_atom) -> std::string {
      const auto& s = self->state;
      return nlohmann::json{{"broker_id", s.settings.broker_id},
                            {"shared", s.settings.shared},
                            {"requests", s.requests},
                            {"failed", s.failed}}
        .dump();
    },
  };
}

}  // namespace

move_destination_actor spawn_move_destination(caf::actor_system& sys, move_destination_settings settings,
                                              std::shared_ptr<catalog_view> catalog, std::shared_ptr<owner_view> owners,
                                              cluster_state_actor state, broker_actor broker, group_actor groups,
                                              registry_actor reg) {
  auto a = sys.spawn(move_destination_fn, std::move(settings), std::move(catalog), std::move(owners),
                     std::move(state), std::move(broker), std::move(groups));
  enroll(reg, caf::actor_cast<caf::actor>(a), "move-destination", "move_destination");
  return a;
}

}  // namespace moonmq
