#include "actors/txn_coordinator.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <optional>

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
using cluster::txn_error;
using cluster::txn_record;
using cluster::txn_request;

/// Proposals of one request that lose their compare-and-set to another
/// writer are decided again against the newer record this many times.
constexpr int max_attempts = 4;

struct pending {
  txn_request req;
  caf::typed_response_promise<txn_answer> rp;
  int attempts = 0;
  bool synced = false;  ///< a refusal was decided again after a read barrier
};

/// An ending under way: markers (and, on commit, offsets) being written.
struct ending {
  txn_record rec;
  size_t left = 0;
  std::string failed;  ///< the first error of this round
  /// EndTxn requests answered once the ending completes (or at end_wait).
  std::vector<caf::typed_response_promise<txn_answer>> waiters;
  int64_t round = 0;  ///< tokens of an earlier round are ignored
};

struct txn_state_t {
  txn_settings settings;
  txn_effects effects;
  std::map<std::string, std::deque<pending>> queues;  ///< per id; the front runs
  std::map<std::string, ending> endings;
  std::map<int64_t, std::string> tokens;  ///< effect token -> id
  int64_t next_token = 1;
  uint64_t endings_finished = 0;
  uint64_t timeouts_aborted = 0;
  uint64_t markers_failed = 0;
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

txn_answer answer_of(txn_error e, std::string why) {
  txn_answer a;
  a.error = e;
  a.message = std::move(why);
  return a;
}

void run(self_ptr self, const std::string& id);
void start_ending(self_ptr self, const std::string& id, txn_record rec);

/// Proposes `rec` for `id` at version `expect`; `ok` gets the applied record
/// (its version set), `refused` is told of a lost compare-and-set, `failed`
/// of anything else (no leader, timeout).
void propose(self_ptr self, const std::string& id, txn_record rec, uint64_t expect,
             std::function<void(txn_record)> ok, std::function<void()> refused,
             std::function<void(std::string)> failed) {
  raft::txn_entry e;
  e.transactional_id = id;
  e.record = rec;
  e.expect_version = expect;
  auto payload = raft::to_json(raft::entry_payload{e}).dump();
  self->request(self->state.settings.raft, std::chrono::seconds(30), propose_atom::value, txn_atom::value, payload,
                true)
    .then(
      [rec, ok](int64_t index, int64_t) mutable {
        rec.version = static_cast<uint64_t>(index);
        ok(std::move(rec));
      },
      [refused, failed](const caf::error& err) {
        if (error_code_of(err) == "txn_state_changed")
          refused();
        else
          failed(message_of(err));
      });
}

/// An expected version no record has (versions are log indices): a `txn`
/// entry carrying it always commits as a no-op.
constexpr uint64_t barrier_version = std::numeric_limits<uint64_t>::max();

/// Read barrier: proposes a `txn` entry for `id` that cannot apply, so that
/// once it is settled here (refused, as it always is) this broker's image
/// holds every entry committed before it, then decides `id`'s front
/// request again. Any outcome runs the queue again: a barrier that could
/// not be written (no leader) leaves the image as it was.
void sync_then_run(self_ptr self, const std::string& id, const std::optional<txn_record>& current) {
  txn_record rec = current.value_or(txn_record{});
  rec.producer_id = std::max<int64_t>(rec.producer_id, 0);  // a valid record; never applied
  auto again = [self, id] { run(self, id); };
  propose(self, id, std::move(rec), barrier_version, [again](txn_record) { again(); }, again,
          [again](std::string) { again(); });
}

/// The front request of `id` is answered; the next one runs.
void finish_front(self_ptr self, const std::string& id, txn_answer a) {
  auto& q = self->state.queues[id];
  if (!q.empty()) {
    q.front().rp.deliver(std::move(a));
    q.pop_front();
  }
  run(self, id);
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
  if (st.endings.count(id))
    return;  // the ending runs first; its end runs the queue again
  auto& p = qit->second.front();
  auto current = record_of(self, id);
  auto d = cluster::decide(p.req, current, wall_ms(), st.effects.new_producer_id(), st.settings.max_timeout_ms);
  if (!d.write) {
    if (d.answer.error != txn_error::none && !p.synced) {
      // A refusal is decided on this broker's image, which may not have
      // applied an entry another broker already committed (TxnOffsetCommit
      // runs on the group's coordinator, right after AddOffsetsToTxn at the
      // id's): decide it once more on an image past a read barrier.
      p.synced = true;
      sync_then_run(self, id, current);
      return;
    }
    finish_front(self, id, std::move(d.answer));
    return;
  }
  auto expect = current ? current->version : 0;
  bool is_end = p.req.what == txn_request::kind::end;
  propose(
    self, id, std::move(*d.write), expect,
    [self, id, d, is_end](txn_record applied) {
      auto& q = self->state.queues[id];
      if (d.ends) {
        start_ending(self, id, applied);
        if (is_end && !q.empty()) {
          // Answered when the markers are written (or at end_wait).
          self->state.endings[id].waiters.push_back(q.front().rp);
          q.pop_front();
          run(self, id);
          return;
        }
      }
      finish_front(self, id, d.answer);
    },
    [self, id] {
      auto& q = self->state.queues[id];
      if (q.empty())
        return;
      if (++q.front().attempts >= max_attempts) {
        finish_front(self, id, answer_of(txn_error::concurrent_transactions,
                                         "the record of " + id + " kept changing under this request; retry"));
        return;
      }
      run(self, id);  // decided again against the newer record
    },
    [self, id](std::string why) {
      finish_front(self, id, answer_of(txn_error::coordinator_not_available,
                                       "the metadata log did not take the change of " + id + ": " + why));
    });
}

void answer_waiters(ending& e, const txn_answer& a) {
  for (auto& w : e.waiters)
    w.deliver(a);
  e.waiters.clear();
}

/// Writes every marker (and the committed offsets) of the ending of `id`.
void write_round(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto& e = st.endings[id];
  e.round = st.next_token;
  e.failed.clear();
  std::map<std::string, std::vector<cluster::txn_offset>> by_group;
  if (e.rec.state == cluster::txn_state::prepare_commit)
    for (const auto& o : e.rec.offsets)
      by_group[o.group].push_back(o);
  e.left = e.rec.partitions.size() + by_group.size();
  auto me = caf::actor_cast<txn_actor>(self);
  auto done_fn = [me, self, id]() {
    auto token = self->state.next_token++;
    self->state.tokens[token] = id;
    return [me, token](std::string err) { caf::anon_send(me, txn_atom::value, step_atom::value, token, std::move(err)); };
  };
  if (e.left == 0) {
    // Nothing to write (no partition was added): completes at once.
    e.left = 1;
    done_fn()(std::string{});
    return;
  }
  auto rec = e.rec;
  for (const auto& p : rec.partitions)
    st.effects.write_marker(rec, p, done_fn());
  for (const auto& [group, offsets] : by_group)
    st.effects.commit_offsets(group, offsets, done_fn());
}

void start_ending(self_ptr self, const std::string& id, txn_record rec) {
  auto& e = self->state.endings[id];
  e.rec = std::move(rec);
  write_round(self, id);
  auto wait = self->state.settings.end_wait;
  self->delayed_send(self, wait, txn_atom::value, step_atom::value, int64_t{-1}, id);
}

/// Every effect of the round reported.
void round_done(self_ptr self, const std::string& id) {
  auto& e = self->state.endings[id];
  if (!e.failed.empty()) {
    ++self->state.markers_failed;
    log::get("broker")->warn("txn.ending_retry id=\"{}\" state={} error=\"{}\"", id,
                             cluster::to_string(e.rec.state), e.failed);
    // The outcome is durable: answer now, finish on a later tick.
    answer_waiters(e, txn_answer{txn_error::none, e.rec.producer_id, e.rec.producer_epoch, {}});
    self->state.endings.erase(id);
    run(self, id);
    return;
  }
  auto done = cluster::completed(e.rec);
  propose(
    self, id, done, e.rec.version,
    [self, id](txn_record applied) {
      auto& st = self->state;
      ++st.endings_finished;
      auto it = st.endings.find(id);
      if (it != st.endings.end()) {
        answer_waiters(it->second, txn_answer{txn_error::none, applied.producer_id, applied.producer_epoch, {}});
        st.endings.erase(it);
      }
      run(self, id);
    },
    [self, id] {
      // Another coordinator completed (or changed) it first.
      auto& st = self->state;
      auto it = st.endings.find(id);
      if (it != st.endings.end()) {
        auto now = record_of(self, id);
        bool same = now && !cluster::ending(*now) && now->producer_epoch == it->second.rec.producer_epoch;
        answer_waiters(it->second, same ? txn_answer{txn_error::none, now->producer_id, now->producer_epoch, {}}
                                        : answer_of(txn_error::concurrent_transactions, "the record of " + id
                                                                                            + " changed; retry"));
        st.endings.erase(it);
      }
      run(self, id);
    },
    [self, id](std::string why) {
      auto& st = self->state;
      log::get("broker")->warn("txn.complete_failed id=\"{}\" error=\"{}\"", id, why);
      auto it = st.endings.find(id);
      if (it != st.endings.end()) {
        answer_waiters(it->second, txn_answer{txn_error::none, it->second.rec.producer_id,
                                              it->second.rec.producer_epoch, {}});
        st.endings.erase(it);
      }
      run(self, id);
    });
}

void tick(self_ptr self) {
  auto& st = self->state;
  auto txns = st.settings.owners->transactions();
  auto now = wall_ms();
  for (const auto& [id, rec] : *txns) {
    if (st.endings.count(id) || st.queues.count(id) || !st.effects.coordinates(id))
      continue;
    if (cluster::ending(rec)) {
      start_ending(self, id, rec);  // left by a coordinator that died, or a failed round
      continue;
    }
    if (auto abort = cluster::timed_out(rec, now)) {
      // A request of the id racing this abort loses its compare-and-set
      // (or makes this one lose), and is decided again.
      auto key = id;
      propose(
        self, key, *abort, rec.version,
        [self, key](txn_record applied) {
          ++self->state.timeouts_aborted;
          log::get("broker")->info("txn.timed_out id=\"{}\" producer_id={} epoch={}", key, applied.producer_id,
                         applied.producer_epoch);
          start_ending(self, key, applied);
          run(self, key);
        },
        [self, key] { run(self, key); }, [self, key](std::string) { run(self, key); });
    }
  }
}

txn_actor::behavior_type coordinator_fn(self_ptr self, txn_settings settings, txn_effects effects) {
  self->state.settings = std::move(settings);
  self->state.effects = std::move(effects);
  self->delayed_send(self, self->state.settings.tick, tick_atom::value);
  return {
    [self](txn_atom, txn_request& req) -> caf::result<txn_answer> {
      auto rp = self->make_response_promise<txn_answer>();
      auto id = req.transactional_id;
      auto& q = self->state.queues[id];
      q.push_back(pending{std::move(req), rp, 0});
      if (q.size() == 1)
        run(self, id);
      return rp;
    },
    [self](txn_atom, step_atom, int64_t token, std::string& err) {
      auto& st = self->state;
      if (token == -1) {
        // end_wait passed: answer the EndTxn waiters; the ending goes on.
        auto it = st.endings.find(err);
        if (it != st.endings.end())
          answer_waiters(it->second, txn_answer{txn_error::none, it->second.rec.producer_id,
                                                it->second.rec.producer_epoch, {}});
        return;
      }
      auto t = st.tokens.find(token);
      if (t == st.tokens.end())
        return;
      auto id = t->second;
      st.tokens.erase(t);
      auto it = st.endings.find(id);
      if (it == st.endings.end() || token < it->second.round)
        return;
      if (!err.empty() && it->second.failed.empty())
        it->second.failed = err;
      if (--it->second.left == 0)
        round_done(self, id);
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
                  {"markers_failed", st.markers_failed}}
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
