#include "actors/txn_coordinator.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/cluster_state.hpp"
#include "actors/errors.hpp"
#include "raft/types.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

using json = nlohmann::json;
using cluster::txn_answer;
using cluster::txn_decision;
using cluster::txn_error;
using cluster::txn_record;
using cluster::txn_request;

/// Proposals of one request that lose their compare-and-set to another
/// writer are decided again, once this broker's image holds the entry that
/// won, this many times.
constexpr int max_attempts = 8;
/// How long a refused request waits for the image to move past the version
/// it was refused at (a refusal forwarded by the leader arrives before this
/// broker applied the winning entry), checked every `catch_up_step`.
constexpr std::chrono::milliseconds catch_up_wait{2000};
constexpr std::chrono::milliseconds catch_up_step{5};

using promise = caf::typed_response_promise<txn_answer>;

struct pending {
  txn_request req;
  std::optional<promise> rp;  ///< none for the coordinator's own (expire)
  uint64_t seq = 0;           ///< callbacks act only on the front they were made for
  int attempts = 0;
  bool in_flight = false;     ///< a proposal of it is under way
  /// Refused at this version: decided again once the image moved past it
  /// (or catch_up_wait passed since `refused_at`).
  std::optional<uint64_t> refused_version;
  std::chrono::steady_clock::time_point refused_at;
};

/// An ending round under way: markers (and, on commit, offsets) being
/// written, then the completed record.
struct ending {
  txn_record rec;
  size_t left = 0;
  std::string failed;  ///< the first error of this round
  /// EndTxn requests answered once every effect is written (or at end_wait).
  std::vector<promise> waiters;
  int64_t round = 0;
  /// Every effect is written: the id's next request may be decided against
  /// the completed record and its write carry the completion.
  bool effects_done = false;
  /// A write that completes the ending (alone or with the next request's
  /// change) is under way.
  bool completing = false;
};

/// The effects of an ending that succeeded, kept across rounds so that a
/// retry writes only what failed (a second marker or offset commit of the
/// same transaction is never sent once one succeeded).
struct effects_done {
  uint64_t version = 0;  ///< of the prepared record
  std::set<std::string> keys;
};

struct txn_state_t {
  txn_settings settings;
  txn_effects effects;
  std::map<std::string, std::deque<pending>> queues;  ///< per id; the front runs
  std::map<std::string, ending> endings;
  std::map<std::string, effects_done> done;
  uint64_t next_seq = 1;
  int64_t next_round = 1;
  uint64_t endings_finished = 0;
  uint64_t timeouts_aborted = 0;
  uint64_t rounds_failed = 0;
  uint64_t markers_failed = 0;  ///< markers and offset commits that failed
  uint64_t ids_expired = 0;
  /// Ids whose removal is proposed, at the version it expects; kept until
  /// this broker's image shows the record gone or changed.
  std::map<std::string, uint64_t> removing;
  static inline const char* name = "txn_coordinator";
};

using self_ptr = txn_actor::stateful_pointer<txn_state_t>;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
    .count();
}

std::optional<txn_record> record_of(self_ptr self, const std::string& id) {
  auto txns = self->state.settings.owners->transactions();
  auto it = txns->find(id);
  if (it == txns->end())
    return std::nullopt;
  return it->second;
}

/// `r` stamped with this broker's wall clock as its last activity.
txn_record stamped(txn_record r) {
  r.updated_ms = wall_ms();
  return r;
}

txn_answer answer_of(txn_error e, std::string why) {
  txn_answer a;
  a.error = e;
  a.message = std::move(why);
  return a;
}

txn_answer success_of(const txn_record& r) {
  return txn_answer{txn_error::none, r.producer_id, r.producer_epoch, {}};
}

/// Success before every marker is written: the outcome is durable and the
/// tick finishes the ending; `why` says what is still missing.
txn_answer pending_of(const txn_record& r, std::string why) {
  return txn_answer{txn_error::none, r.producer_id, r.producer_epoch, std::move(why)};
}

void run(self_ptr self, const std::string& id);
void start_ending(self_ptr self, const std::string& id, const txn_record& rec);
void complete(self_ptr self, const std::string& id);

/// Whether the image shows the write of `rec` (or the removal) for `id`
/// proposed at version `expect` applied: the record now in the image is
/// `rec` at a later version (a write by another coordinator of the very
/// same record has the same effect), or the id is gone for a removal.
/// Asked when the raft node could not tell (its entry arrived inside an
/// installed snapshot). For a proposal made here the image has applied past
/// the entry's index by then; for one relayed from the leader it may still
/// be behind, and the request is then decided again, which the version's
/// compare-and-set keeps safe.
std::optional<txn_record> applied_in_image(self_ptr self, const std::string& id, const txn_record& rec,
                                           uint64_t expect, bool remove) {
  auto current = record_of(self, id);
  if (remove)
    return current ? std::nullopt : std::optional<txn_record>(rec);
  if (!current || current->version <= expect)
    return std::nullopt;
  auto same = rec;
  same.version = current->version;
  if (!(same == *current))
    return std::nullopt;
  return current;
}

/// Proposes `rec` for `id` at version `expect` (with `remove`, the id's
/// removal instead); `ok` gets the applied record (its version set),
/// `refused` is told of a lost compare-and-set, `failed` of anything else
/// (no leader, timeout, an entry replaced after a change of leader). An
/// outcome the raft node cannot tell (unavailable proposal_outcome_unknown: the
/// entry arrived here inside an installed snapshot) is decided from the
/// image: `ok` when it holds the write, else `refused`, so that the request
/// is decided again against the image (every write is a compare-and-set on
/// the version, so deciding again never applies a change twice).
void propose(self_ptr self, const std::string& id, txn_record rec, uint64_t expect,
             std::function<void(txn_record)> ok, std::function<void()> refused,
             std::function<void(std::string)> failed, bool remove = false) {
  raft::txn_entry e;
  e.transactional_id = id;
  e.record = rec;
  e.expect_version = expect;
  e.remove = remove;
  auto payload = raft::to_json(raft::entry_payload{e}).dump();
  self->request(self->state.settings.raft, std::chrono::seconds(30), propose_atom::value, txn_atom::value, payload,
                true)
    .then(
      [rec, ok](int64_t index, int64_t) mutable {
        rec.version = static_cast<uint64_t>(index);
        ok(std::move(rec));
      },
      [self, id, rec, expect, remove, ok, refused, failed](const caf::error& err) {
        const auto code = error_code_of(err);
        if (code == "proposal_outcome_unknown") {
          auto applied = applied_in_image(self, id, rec, expect, remove);
          log::get("broker")->info("txn.proposal_settled_from_image id=\"{}\" expect_version={} applied={} "
                                   "why=\"{}\"",
                                   id, expect, applied.has_value(), message_of(err));
          if (applied)
            ok(std::move(*applied));
          else
            refused();
        } else if (code == "txn_state_changed") {
          refused();
        } else {
          failed(message_of(err));
        }
      });
}

pending make_pending(self_ptr self, txn_request req, std::optional<promise> rp) {
  pending p;
  p.req = std::move(req);
  p.rp = std::move(rp);
  p.seq = self->state.next_seq++;
  return p;
}

/// The front of `id`'s queue when it is still the request `seq`.
pending* front_of(self_ptr self, const std::string& id, uint64_t seq) {
  auto q = self->state.queues.find(id);
  if (q == self->state.queues.end() || q->second.empty() || q->second.front().seq != seq)
    return nullptr;
  return &q->second.front();
}

/// Answers the front request `seq` of `id` (when still there); the next runs.
void finish_front(self_ptr self, const std::string& id, uint64_t seq, const txn_answer& a) {
  if (auto* p = front_of(self, id, seq)) {
    if (p->rp)
      p->rp->deliver(a);
    self->state.queues[id].pop_front();
  }
  run(self, id);
}

/// The front request `seq` lost its compare-and-set at version `expect`:
/// decided again once the image holds the entry that won.
void retry_front(self_ptr self, const std::string& id, uint64_t seq, uint64_t expect) {
  auto* p = front_of(self, id, seq);
  if (!p)
    return;
  p->in_flight = false;
  if (++p->attempts >= max_attempts) {
    finish_front(self, id, seq,
                 answer_of(txn_error::concurrent_transactions, "the record of " + id + " kept changing; retry"));
    return;
  }
  p->refused_version = expect;
  p->refused_at = std::chrono::steady_clock::now();
  run(self, id);
}

/// Whether an answer decided without a write must first be confirmed
/// against the metadata log: an error a lagging image could cause (an
/// AddOffsetsToTxn or InitProducerId applied elsewhere and not here yet),
/// or an EndTxn taken for a retry of the last one. Confirmed by writing
/// the record unchanged at its version: applied, the image was current.
bool needs_confirmation(const txn_request& req, const txn_decision& d, const std::optional<txn_record>& current) {
  if (d.write || !current || req.what == txn_request::kind::expire)
    return false;
  switch (d.answer.error) {
    case txn_error::invalid_txn_state:
    case txn_error::invalid_producer_epoch:
    case txn_error::invalid_producer_id_mapping: return true;
    case txn_error::none: return req.what == txn_request::kind::end;
    default: return false;
  }
}

void run(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto qit = st.queues.find(id);
  if (qit == st.queues.end())
    return;
  if (qit->second.empty()) {
    st.queues.erase(qit);
    return;
  }
  if (qit->second.front().in_flight)
    return;  // the proposal runs first, and runs the queue again
  // While an ending runs, the next request waits; once its effects are all
  // written, the request is decided against the completed record and its
  // write carries the completion (one metadata-log write, not two).
  auto eit = st.endings.find(id);
  const bool merging = eit != st.endings.end();
  if (merging && (!eit->second.effects_done || eit->second.completing))
    return;  // the ending runs the queue again when it ends
  auto& p = qit->second.front();
  const auto seq = p.seq;
  auto current = merging ? std::optional<txn_record>(cluster::completed(eit->second.rec)) : record_of(self, id);
  if (p.refused_version) {
    const uint64_t now_at = current ? current->version : 0;
    if (now_at == *p.refused_version && std::chrono::steady_clock::now() - p.refused_at < catch_up_wait) {
      self->delayed_send(self, catch_up_step, txn_atom::value, id);  // not applied here yet
      return;
    }
    p.refused_version.reset();
  }
  const auto new_pid = p.req.what == txn_request::kind::init ? st.effects.new_producer_id() : int64_t{-1};
  auto d = cluster::decide(p.req, current, wall_ms(), new_pid, st.settings.max_timeout_ms);
  bool confirm = needs_confirmation(p.req, d, current);
  if (merging && (!d.write || confirm)) {
    complete(self, id);  // the request is decided once the completion applied
    return;
  }
  if (merging)
    eit->second.completing = true;
  if (!d.write && !confirm) {
    finish_front(self, id, seq, d.answer);
    return;
  }
  p.in_flight = true;
  // EndTxn and an operator's abort are answered once the markers are written.
  const bool is_end = p.req.what == txn_request::kind::end || p.req.what == txn_request::kind::abort;
  const bool is_expire = p.req.what == txn_request::kind::expire;
  auto write = confirm ? *current : std::move(*d.write);
  // The id's last activity (transactional.id.expiration.ms); a confirmation
  // writes the record unchanged, as Kafka leaves the timestamp of a refused
  // request alone.
  if (!confirm)
    write.updated_ms = wall_ms();
  const uint64_t expect = current ? current->version : 0;
  propose(
    self, id, std::move(write), expect,
    [self, id, seq, d, is_end, is_expire, merging](txn_record applied) {
      if (merging) {
        ++self->state.endings_finished;
        self->state.done.erase(id);
        self->state.endings.erase(id);
      }
      auto* front = front_of(self, id, seq);
      if (!front)
        return;
      front->in_flight = false;
      if (d.ends) {
        if (is_expire) {
          ++self->state.timeouts_aborted;
          log::get("broker")->info("txn.timed_out id=\"{}\" producer_id={} epoch={}", id, applied.producer_id,
                                   applied.producer_epoch);
        }
        start_ending(self, id, applied);
        if (is_end && front->rp) {
          // Answered when the markers are written (or at end_wait).
          self->state.endings[id].waiters.push_back(*front->rp);
          front->rp.reset();
        }
      }
      finish_front(self, id, seq, d.answer);
    },
    [self, id, seq, expect, merging] {
      if (merging)  // another coordinator wrote the record since (it completed the ending)
        self->state.endings.erase(id);
      retry_front(self, id, seq, expect);
    },
    [self, id, seq, merging](std::string why) {
      if (merging)  // the record is still prepared: the tick finishes the ending
        self->state.endings.erase(id);
      finish_front(self, id, seq,
                   answer_of(txn_error::coordinator_not_available,
                             "the metadata log did not take the change of " + id + ": " + why));
    });
}

void answer_waiters(ending& e, const txn_answer& a) {
  for (auto& w : e.waiters)
    w.deliver(a);
  e.waiters.clear();
}

/// Marker and offset effects' keys: "m<topic>/<partition>", "g<group>".
std::string marker_key(const cluster::txn_partition& p) {
  return "m" + p.topic + "/" + std::to_string(p.partition);
}

/// Starts a round of the ending of `id` (prepared record `rec`): every
/// marker and offset commit not yet done for this prepared version.
void start_ending(self_ptr self, const std::string& id, const txn_record& rec) {
  auto& st = self->state;
  if (st.endings.count(id))
    return;
  auto& e = st.endings[id];
  e.rec = rec;
  e.round = st.next_round++;
  auto& done = st.done[id];
  if (done.version != rec.version)
    done = effects_done{rec.version, {}};
  std::map<std::string, std::vector<cluster::txn_offset>> by_group;
  if (rec.state == cluster::txn_state::prepare_commit)
    for (const auto& o : rec.offsets)
      if (!done.keys.count("g" + o.group))
        by_group[o.group].push_back(o);
  std::vector<cluster::txn_partition> markers;
  for (const auto& p : rec.partitions)
    if (!done.keys.count(marker_key(p)))
      markers.push_back(p);
  e.left = markers.size() + by_group.size();
  self->delayed_send(self, st.settings.end_wait, txn_atom::value, id, e.round);
  if (e.left == 0) {
    complete(self, id);
    return;
  }
  auto me = caf::actor_cast<txn_actor>(self);
  auto reply = [me, id, round = e.round](std::string key) {
    return [me, id, round, key](std::string err) {
      caf::anon_send(me, txn_atom::value, step_atom::value, id, round, key, std::move(err));
    };
  };
  for (const auto& p : markers)
    st.effects.write_marker(rec, p, reply(marker_key(p)));
  for (const auto& [group, offsets] : by_group)
    st.effects.commit_offsets(group, offsets, reply("g" + group));
}

/// Ends the ending of `id` (answering its EndTxn waiters with `a`) and runs the queue.
void end_round(self_ptr self, const std::string& id, const txn_answer& a) {
  auto it = self->state.endings.find(id);
  if (it != self->state.endings.end()) {
    answer_waiters(it->second, a);
    self->state.endings.erase(it);
  }
  run(self, id);
}

/// Every effect of the ending is done: the completed record is written.
void complete(self_ptr self, const std::string& id) {
  auto& e = self->state.endings[id];
  e.completing = true;
  auto rec = e.rec;
  propose(
    self, id, stamped(cluster::completed(rec)), rec.version,
    [self, id](txn_record applied) {
      ++self->state.endings_finished;
      self->state.done.erase(id);
      end_round(self, id, success_of(applied));
    },
    [self, id, rec] {
      // Another coordinator completed it first (the record moved on). A
      // completion whose outcome the raft node could not tell and that the
      // image does not show either may still have left the record prepared
      // at this version: then what succeeded of the ending is kept, so that
      // the tick's next round sends no marker or offset twice.
      auto now = record_of(self, id);
      if (!now || now->version != rec.version)
        self->state.done.erase(id);
      end_round(self, id, success_of(rec));
    },
    [self, id, rec](std::string why) {
      log::get("broker")->warn("txn.complete_failed id=\"{}\" error=\"{}\"", id, why);
      end_round(self, id, success_of(rec));  // the outcome is durable; the tick completes it
    });
}

/// Whether the id of `rec` expired at `now_ms` (Kafka's
/// transactional.id.expiration.ms): nothing open or ending, and no write
/// for longer than `after`. A record of unknown age (updated_ms 0) never is.
bool expired(const txn_record& rec, int64_t now_ms, std::chrono::milliseconds after) {
  const bool idle = rec.state == cluster::txn_state::empty || rec.state == cluster::txn_state::complete_commit
                    || rec.state == cluster::txn_state::complete_abort;
  return idle && rec.updated_ms > 0 && now_ms - rec.updated_ms > after.count();
}

/// Proposes the removal of expired id `id` at its record's version. A
/// request of the id decided meanwhile wins or loses the compare-and-set
/// against it like any other writer.
void remove_id(self_ptr self, const std::string& id, const txn_record& rec) {
  self->state.removing[id] = rec.version;
  // Refused or failed: forgotten, so that the next tick decides again.
  auto forget = [self, id] { self->state.removing.erase(id); };
  propose(
    self, id, rec, rec.version,
    [self, id, idle_ms = wall_ms() - rec.updated_ms](const txn_record& removed) {
      ++self->state.ids_expired;
      log::get("broker")->info("txn.id_expired id=\"{}\" producer_id={} idle_ms={}", id, removed.producer_id,
                               idle_ms);
    },
    forget, [forget](const std::string&) { forget(); }, true);
}

void tick(self_ptr self) {
  auto& st = self->state;
  auto txns = st.settings.owners->transactions();
  auto now = wall_ms();
  // What succeeded of endings another broker finished (this one stopped
  // coordinating the id) is forgotten once the record has moved on.
  for (auto it = st.done.begin(); it != st.done.end();) {
    auto rec = txns->find(it->first);
    bool stale = !st.endings.count(it->first)
                 && (rec == txns->end() || rec->second.version != it->second.version);
    it = stale ? st.done.erase(it) : std::next(it);
  }
  for (auto it = st.removing.begin(); it != st.removing.end();) {
    auto rec = txns->find(it->first);
    bool settled = rec == txns->end() || rec->second.version != it->second;
    it = settled ? st.removing.erase(it) : std::next(it);
  }
  for (const auto& [id, rec] : *txns) {
    if (st.endings.count(id) || st.queues.count(id) || st.removing.count(id))
      continue;
    if (expired(rec, now, st.settings.id_expiration) && st.effects.coordinates(id)) {
      remove_id(self, id, rec);
      continue;
    }
    const bool ends = cluster::ending(rec);
    const bool past_timeout = !ends && cluster::timed_out(rec, now).has_value();
    if ((!ends && !past_timeout) || !st.effects.coordinates(id))
      continue;
    if (ends) {
      start_ending(self, id, rec);  // left by a coordinator that died, or a failed round
      continue;
    }
    // The abort runs as the id's own request, in line with the clients'.
    txn_request expire;
    expire.what = txn_request::kind::expire;
    expire.transactional_id = id;
    st.queues[id].push_back(make_pending(self, std::move(expire), std::nullopt));
    run(self, id);
  }
}

txn_actor::behavior_type coordinator_fn(self_ptr self, txn_settings settings, txn_effects effects) {
  self->state.settings = std::move(settings);
  self->state.effects = std::move(effects);
  self->delayed_send(self, self->state.settings.tick, tick_atom::value);
  return {
    [self](txn_atom, txn_request& req) -> caf::result<txn_answer> {
      if (req.what == txn_request::kind::abort && !self->state.effects.coordinates(req.transactional_id))
        return answer_of(txn_error::not_coordinator, "broker " + self->state.settings.broker_id
                                                       + " does not coordinate " + req.transactional_id);
      auto rp = self->make_response_promise<txn_answer>();
      auto id = req.transactional_id;
      auto& q = self->state.queues[id];
      q.push_back(make_pending(self, std::move(req), rp));
      if (q.size() == 1)
        run(self, id);
      return rp;
    },
    [self](txn_atom, std::string& id) { run(self, id); },
    [self](txn_atom, std::string& id, int64_t round) {
      // end_wait passed: the EndTxn waiters are answered; the ending goes on.
      auto it = self->state.endings.find(id);
      if (it != self->state.endings.end() && it->second.round == round)
        answer_waiters(it->second, pending_of(it->second.rec, "markers not all written within "
                                                                + std::to_string(self->state.settings.end_wait.count())
                                                                + " ms; the coordinator keeps writing them"));
    },
    [self](txn_atom, commit_atom, std::string& id, int64_t round) {
      // complete_linger passed without a request to carry the completion.
      auto it = self->state.endings.find(id);
      if (it != self->state.endings.end() && it->second.round == round && it->second.effects_done
          && !it->second.completing)
        complete(self, id);
    },
    [self](txn_atom, step_atom, std::string& id, int64_t round, std::string& key, std::string& err) {
      auto& st = self->state;
      auto it = st.endings.find(id);
      if (it == st.endings.end() || it->second.round != round)
        return;
      auto& e = it->second;
      if (err.empty()) {
        st.done[id].keys.insert(key);
      } else {
        ++st.markers_failed;
        if (e.failed.empty())
          e.failed = err;
      }
      if (--e.left != 0)
        return;
      if (e.failed.empty()) {
        // The outcome is visible on every partition: EndTxn is answered now.
        // The completion rides on the id's next request when one comes
        // within complete_linger (the producer's next transaction), else it
        // is written alone.
        e.effects_done = true;
        answer_waiters(e, success_of(e.rec));
        self->delayed_send(self, st.settings.complete_linger, txn_atom::value, commit_atom::value, id, round);
        run(self, id);
        return;
      }
      ++st.rounds_failed;
      log::get("broker")->warn("txn.ending_retry id=\"{}\" state={} error=\"{}\"", id,
                               cluster::to_string(e.rec.state), e.failed);
      // The outcome is durable: answered now; the tick starts the next round.
      end_round(self, id, pending_of(e.rec, "a marker or offset commit failed (" + e.failed
                                              + "); the coordinator retries it"));
    },
    [self](tick_atom) {
      tick(self);
      self->delayed_send(self, self->state.settings.tick, tick_atom::value);
    },
    [self](status_atom) {
      auto& st = self->state;
      size_t queued = 0;
      for (const auto& [id, q] : st.queues)
        queued += q.size();
      return json{{"queued", queued},
                  {"ending", st.endings.size()},
                  {"endings_finished", st.endings_finished},
                  {"timeouts_aborted", st.timeouts_aborted},
                  {"rounds_failed", st.rounds_failed},
                  {"markers_failed", st.markers_failed},
                  {"ids_expired", st.ids_expired}}
        .dump();
    },
  };
}

}  // namespace

txn_actor spawn_txn_coordinator(caf::actor_system& sys, txn_settings settings, txn_effects effects,
                                registry_actor reg) {
  auto a = sys.spawn(coordinator_fn, std::move(settings), std::move(effects));
  enroll(reg, caf::actor_cast<caf::actor>(a), "txn-coordinator", "txn_coordinator");
  return a;
}

}  // namespace moonmq
