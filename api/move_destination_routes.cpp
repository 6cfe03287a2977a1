// The destination half of a partition move (docs/cluster.md "How a move
// runs"): the routes a move's source calls on the destination broker to
// prepare, fill, confirm or clean up its copy, and to merge the group
// offsets it pushes. The operator's routes and the broker-to-broker move
// requests are in move_routes.cpp.

#include <algorithm>

#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "cluster/move_journal.hpp"
#include "cluster/move_messages.hpp"
#include "raft/types.hpp"
#include "api/actor_answers.hpp"
#include "api/cluster_routes.hpp"
#include "api/move_routes_impl.hpp"
#include "util/logging.hpp"

namespace moonmq::transport::move_detail {
namespace {

/// True when this broker's table names another broker as the owner: only
/// then may a move write over its copy.
bool owned_elsewhere(const move_context& ctx, const std::string& topic, int32_t partition) {
  auto owners = ctx.owners->get();
  auto it = owners->find(cluster::topic_partition{topic, partition});
  return it != owners->end() && it->second != ctx.broker_id;
}

http_response owns_it(const move_context& ctx, const std::string& topic, int32_t partition) {
  return http_response::error(409, "destination_owns_partition",
                              "broker " + ctx.broker_id + " owns " + topic + "/" + std::to_string(partition)
                                + " itself; a move may only write over a copy owned elsewhere");
}

/// 409 offset_mismatch carrying the local log end, so the sender can resume.
http_response offset_mismatch(int64_t end, const std::string& message) {
  return http_response::json(409, json{{"error", "offset_mismatch"}, {"message", message}, {"log_end_offset", end}}.dump());
}

void ask_bounds(const move_context& ctx, const partition_actor& part,
                std::function<void(int64_t, int64_t, int64_t)> ok, fail_fn fail) {
  ctx.system->spawn(
    [](caf::event_based_actor* self, partition_actor p, std::chrono::milliseconds timeout,
       std::function<void(int64_t, int64_t, int64_t)> on_ok, fail_fn on_fail) {
      self->request(p, timeout, bounds_atom::value)
        .then([on_ok](int64_t lo, int64_t hi, int64_t size) { on_ok(lo, hi, size); },
              [on_fail](caf::error& e) { on_fail(e); });
    },
    part, ctx.timeout, std::move(ok), std::move(fail));
}

/// Records `owners` (partition → owner) one after the other, then `done`.
void set_owners(const move_context& ctx, const std::string& topic, std::shared_ptr<std::vector<std::pair<int32_t, std::string>>> owners,
                size_t i, int64_t at, std::function<void()> done, fail_fn fail) {
  if (i >= owners->size()) {
    done();
    return;
  }
  auto [partition, owner] = (*owners)[i];
  // A row the table already holds is not written again: with the metadata
  // log every partition of a logged topic has its owner from the entry that
  // created it, so an ensure proposes nothing for them.
  if (auto now = ctx.owners->get(); now->count({topic, partition}) && now->at({topic, partition}) == owner) {
    set_owners(ctx, topic, owners, i + 1, at, done, fail);
    return;
  }
  ask<bool>(
    *ctx.system, ctx.state, ctx.timeout,
    [ctx, topic, owners, i, at, done, fail](bool&) { set_owners(ctx, topic, owners, i + 1, at, done, fail); },
    fail, owner_atom::value, topic, partition, owner, at);
}

// --- destination side ---------------------------------------------------------

/// Step 1 on the destination: the topic exists with the source's partition
/// count, the partition is owned by the source in this broker's table, and
/// it starts empty at the source's log-start offset, sealed.
void ensure(const move_context& ctx, http_request& req, const responder& respond) {
  json body;
  if (!object_body(req, respond, body))
    return;
  auto topic = req.params["topic"];
  const auto& raw = req.params["partition"];
  if (raw.empty() || raw.size() > 9 || raw.find_first_not_of("0123456789") != std::string::npos) {
    respond(http_response::error(400, "invalid_request", "the partition must be a number"));
    return;
  }
  auto partition = static_cast<int32_t>(std::stol(raw));
  auto ensure = cluster::move_ensure_from_json(body, partition);
  if (!ensure) {
    respond(http_response::error(400, "invalid_request", ensure.err().message));
    return;
  }
  auto count = ensure->partitions;
  auto from = ensure->from;
  auto start = ensure->log_start_offset;
  auto named = ensure->owners;
  auto config = ensure->config.is_object() ? ensure->config.dump() : std::string{};
  with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
             [ctx, respond, topic, partition, count, from, start, named, config](int64_t at, const std::string&) {
    auto topics = ctx.catalog->get();
    auto t = topics->find(topic);
    int32_t had = t == topics->end() ? 0 : static_cast<int32_t>(t->second.partitions.size());
    if (partition < had && !owned_elsewhere(ctx, topic, partition)) {
      respond(owns_it(ctx, topic, partition));
      return;
    }
    // Shared storage: the moving partition must still be the source's here.
    // Otherwise the move is stale (its source was frozen and its partition
    // failed over, the log ended the move), and naming the source owner
    // below would take the partition from a live owner that was never
    // sealed: it could go on acknowledging appends the source's takeover
    // never sees (docs/shared-storage.md "One writer per epoch").
    if (ctx.shared && partition < had) {
      auto now = ctx.owners->get();
      auto it = now->find(cluster::topic_partition{topic, partition});
      if (it != now->end() && !it->second.empty() && it->second != from) {
        respond(http_response::error(409, "owner_changed",
                                     topic + "/" + std::to_string(partition) + " is owned by " + it->second
                                       + " here, not by the source " + from + "; this move has ended"));
        return;
      }
    }
    // Partitions this ensure creates are owned where the source says they
    // are; the moving one by the source until the move confirms.
    auto owners = std::make_shared<std::vector<std::pair<int32_t, std::string>>>();
    for (int32_t q = had; q < count; ++q)
      if (q != partition)
        owners->emplace_back(q, named.count(q) ? named.at(q) : from);
    owners->emplace_back(partition, from);
    auto fail = fail_with(respond);
    auto prepare = [ctx, respond, topic, partition, start, owners, at, fail] {
      set_owners(ctx, topic, owners, 0, at, [ctx, respond, topic, partition, start, fail] {
        auto now = ctx.catalog->get();
        auto created = now->find(topic);
        if (created == now->end() || static_cast<size_t>(partition) >= created->second.partitions.size()) {
          respond(http_response::error(503, "not_ready", "the topic is not published yet; retry"));
          return;
        }
        auto part = created->second.partitions[static_cast<size_t>(partition)];
        if (ctx.shared) {
          // Shared storage: nothing to reset (the partition's data is the
          // shared directory's chain) and nothing will be copied. The seal
          // alone keeps this broker from taking writes once its image names
          // it owner at the cutover, until the move confirms.
          ask<int64_t>(*ctx.system, part, ctx.timeout, [respond, start, topic, partition](int64_t& end) {
            log::get("reassigner")->info("move.ensured topic={} partition={} copy=none", topic, partition);
            respond(http_response::json(
              200, json{{"log_start_offset", start}, {"log_end_offset", end}, {"copy", "none"}}.dump()));
          }, fail, seal_atom::value, true, true);
          return;
        }
        ask<int64_t>(*ctx.system, part, ctx.timeout, [ctx, respond, part, start, topic, partition, fail](int64_t&) {
          ask<int64_t>(*ctx.system, part, ctx.timeout, [respond, start, topic, partition](int64_t& end) {
            log::get("reassigner")->info("move.ensured topic={} partition={} log_start={}", topic, partition, start);
            respond(http_response::json(200, json{{"log_start_offset", start}, {"log_end_offset", end}}.dump()));
          }, fail, seal_atom::value, true, true);  // durable: still sealed after a restart
        }, fail, reset_atom::value, start);
      }, fail);
    };
    if (had == 0)
      ask<bool>(*ctx.system, ctx.broker, ctx.timeout, [prepare](bool&) { prepare(); }, fail, create_atom::value,
                topic, count, config);
    else if (had < count)
      ask<int32_t>(*ctx.system, ctx.broker, ctx.timeout, [prepare](int32_t&) { prepare(); }, fail, grow_atom::value,
                   topic, count);
    else
      prepare();
  });
}

/// Steps 2 and 4 on the destination: batches with their offsets, appended
/// at exactly `expected_offset`.
void append(const move_context& ctx, http_request& req, const responder& respond) {
  auto local = route_partition(*ctx.catalog, req, respond);
  if (!local)
    return;
  auto topic = req.params["topic"];
  // With the metadata log the destination is named owner at cutover, before
  // the drain's appends: there the durable seal of its copy (set by ensure,
  // lifted by confirm) is what allows them, and the partition enforces it.
  auto e = req.query.find("expected_offset");
  if (e == req.query.end() || e->second.empty() || e->second.size() > 18
      || e->second.find_first_not_of("0123456789") != std::string::npos) {
    respond(http_response::error(400, "invalid_request", "expected_offset must be a non-negative integer"));
    return;
  }
  auto expected = std::stoll(e->second);
  if (ctx.shared) {
    respond(http_response::error(409, "shared_storage",
                                 "a move copies nothing with shared storage: the destination reads the shared "
                                 "directory"));
    return;
  }
  bool sync = req.query.count("sync") && req.query["sync"] == "true";
  // The partition applies it at exactly `expected`, holding it while an
  // earlier batch of the source's window is still on its way.
  ask<int64_t>(*ctx.system, local->second, ctx.timeout,
               [respond](int64_t& new_end) { respond(http_response::json(200, json{{"log_end_offset", new_end}}.dump())); },
               [respond, expected](const caf::error& err) {
                 int64_t start = 0, end = 0;
                 if (out_of_range_bounds(err, start, end))
                   respond(offset_mismatch(end, "log end is " + std::to_string(end) + ", not " + std::to_string(expected)));
                 else
                   fail_with(respond)(err);
               },
               copy_atom::value, static_cast<int64_t>(expected), std::move(req.body), sync);
}

/// Step 5 on the destination: group offsets pushed by the source, higher wins.
void merge_offsets(const move_context& ctx, http_request& req, const responder& respond) {
  json body;
  if (!object_body(req, respond, body))
    return;
  auto pushed = cluster::move_offsets_from_json(body);
  if (!pushed) {
    respond(http_response::error(400, "invalid_request", pushed.err().message));
    return;
  }
  auto topic = pushed->topic;
  auto partition = pushed->partition;
  auto offsets = pushed->offsets.dump();
  with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
             [ctx, respond, topic, partition, offsets](int64_t, const std::string&) {
               ask<int32_t>(*ctx.system, ctx.groups, ctx.timeout,
                            [respond](int32_t& merged) {
                              respond(http_response::json(200, json{{"merged", merged}}.dump()));
                            },
                            fail_with(respond), merge_atom::value, topic, partition, offsets);
             });
}

/// The confirm's refusal of a conditional owner entry: 503 to be retried
/// when the epoch moved by an earlier try of ours, else 409 owner_changed.
void owner_entry_refused(const move_context& ctx, const responder& respond, const std::string& topic,
                         int32_t partition, const caf::error& e) {
  if (error_code_of(e) != "owner_epoch_changed") {
    fail_with(respond)(e);
    return;
  }
  auto now = ctx.owners->owner_and_epoch({topic, partition}).first;
  if (now == ctx.broker_id)  // bumped by an earlier try of ours: retry at the new epoch
    respond(http_response::error(503, "not_ready", "owner epoch moved on; retry"));
  else
    respond(http_response::error(409, "owner_changed", topic + "/" + std::to_string(partition) + " is owned by "
                                                         + now + " now; this move has ended"));
}

/// Step 6 on the destination with shared storage: nothing was copied, so
/// nothing is fsynced and no log start is taken (the chain's is right).
/// The partition, taken over at the cutover's epoch and sealed since,
/// must end at the source's sealed end; the conditional owner entry then
/// bumps the epoch (the worker takes the partition over again there:
/// io_worker.cpp follow_image), the end is checked once more at the new
/// epoch, and only then is the seal lifted. A wrong end leaves it sealed.
void confirm_shared(const move_context& ctx, const responder& respond, const std::string& topic, int32_t partition,
                    partition_actor part, int64_t at, int64_t expected, int64_t cutover_epoch) {
  auto fail = fail_with(respond);
  auto checked = [respond, expected](int64_t end) {
    if (end == expected)
      return true;
    respond(offset_mismatch(end, "log end is " + std::to_string(end) + ", the source's is " + std::to_string(expected)));
    return false;
  };
  ask_bounds(ctx, part, [ctx, respond, topic, partition, part, at, checked, fail, cutover_epoch](int64_t, int64_t end,
                                                                                               int64_t) {
    if (!checked(end))
      return;
    auto [owner, epoch] = ctx.owners->owner_and_epoch({topic, partition});
    // The entry expects the cutover's epoch, never a later one: an earlier
    // try of this confirm may have applied and this broker be taking writes
    // at the epoch after it, which a second entry would end under them.
    // Refused then: the source retries and is answered "already
    // confirmed". (This broker's own confirm in place, reassigner_log.cpp
    // confirm_in_place, stays at the cutover's epoch and ends the move
    // `done`; a request after it is answered above.)
    if (cutover_epoch > 0)
      epoch = cutover_epoch;
    if (owner != ctx.broker_id) {
      respond(http_response::error(409, "owner_changed", topic + "/" + std::to_string(partition) + " is owned by "
                                                           + owner + " now; this move has ended"));
      return;
    }
    auto refused = [ctx, respond, topic, partition](const caf::error& e) {
      owner_entry_refused(ctx, respond, topic, partition, e);
    };
    ask<bool>(*ctx.system, ctx.state, ctx.timeout, [ctx, respond, topic, partition, part, checked, fail](bool&) {
      // Applied here: the next request on the partition takes it over at
      // the new epoch before it is answered.
      ask_bounds(ctx, part, [ctx, respond, topic, partition, part, checked, fail](int64_t, int64_t taken_end, int64_t) {
        if (!checked(taken_end))
          return;
        ask<int64_t>(*ctx.system, part, ctx.timeout, [ctx, respond, topic, partition, taken_end](int64_t&) {
          log::get("reassigner")->info("move.confirmed topic={} partition={} log_end={} copy=none", topic, partition,
                                       taken_end);
          respond(http_response::json(200, json{{"owner", ctx.broker_id}, {"log_end_offset", taken_end}}.dump()));
        }, fail, seal_atom::value, false);
      }, fail);
    }, refused, owner_atom::value, topic, partition, ctx.broker_id, at, epoch);
  }, fail);
}

/// Step 6 on the destination: fsync, check the log end, take ownership, unseal.
void confirm(const move_context& ctx, http_request& req, const responder& respond) {
  auto local = route_partition(*ctx.catalog, req, respond);
  if (!local)
    return;
  json body;
  if (!object_body(req, respond, body))
    return;
  auto confirmed = cluster::move_confirm_from_json(body);
  if (!confirmed) {
    respond(http_response::error(400, "invalid_request", confirmed.err().message));
    return;
  }
  auto expected = confirmed->log_end_offset;
  // The source's log start (DeleteRecords); -1 (absent) from a confirm sent
  // in the source's place without it, which leaves the copy's own.
  const int64_t log_start = confirmed->log_start_offset;
  auto from = confirmed->from;
  // The cutover's epoch (0: absent from an older source's confirm): see below.
  const int64_t cutover_epoch = confirmed->owner_epoch;
  auto topic = req.params["topic"];
  auto [partition, part] = *local;
  with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
             [ctx, respond, topic, partition = partition, part = part, expected, log_start, from,
              cutover_epoch](int64_t at, const std::string&) {
    auto fail = fail_with(respond);
    // This broker is owner since the cutover's entry. Not yet applied here:
    // retry. Another owner: the partition moved on after an earlier try of
    // this confirm took effect (its answer was lost), and nothing may be
    // written over that.
    auto r = ctx.owners->route(ctx.broker_id, {topic, partition});
    if (r.where == partition_route::kind::unowned || (r.where == partition_route::kind::remote && r.owner == from)) {
      respond(http_response::error(503, "not_ready", "broker " + ctx.broker_id + " has not applied the cutover of "
                                                       + topic + "/" + std::to_string(partition) + " yet; retry"));
      return;
    }
    if (r.where == partition_route::kind::remote) {
      respond(http_response::error(409, "owner_changed",
                                   topic + "/" + std::to_string(partition) + " is owned by " + r.owner
                                     + " now; this move has ended"));
      return;
    }
    if (cutover_epoch > 0) {
      // Owner at a later epoch than the cutover's: this broker's conditional
      // owner entry applied, so an earlier try of this confirm (or the
      // controller's, in a fenced source's place) succeeded, and the
      // partition may have taken writes since: its end is past `expected`.
      // Answered as confirmed; the seal is lifted again (idempotent) in case
      // the earlier try stopped between its entry and its unseal.
      // Only for this very move (its source, this destination, that
      // cutover epoch; not taken back), and only while no other move of
      // the partition runs: its seal must not be lifted here.
      auto [owner, epoch] = ctx.owners->owner_and_epoch({topic, partition});
      bool this_move = false, other_open = false, done_in_place = false;
      int64_t sealed_end = -1;  // as the log recorded it (shared storage: from the cutover on)
      const auto moves = ctx.owners->moves();
      for (const auto& [mid, m] : *moves) {
        if (m.tp.topic != topic || m.tp.partition != partition)
          continue;
        if (m.from == from && m.to == ctx.broker_id && m.epoch == cutover_epoch
            && (m.state == "cutover" || m.state == "offsets" || m.state == "done")) {
          this_move = true;
          sealed_end = m.end;
          // Shared storage: this broker's own `done` at the cutover's
          // epoch (reassigner_log.cpp confirm_in_place).
          done_in_place = ctx.shared && m.state == "done" && owner == ctx.broker_id && epoch == cutover_epoch;
        } else if (!raft::finished_move_state(m.state)) {
          other_open = true;
        }
      }
      if (this_move && !other_open
          && (done_in_place || cluster::destination_confirmed(ctx.broker_id, static_cast<uint64_t>(cutover_epoch),
                                                              owner, cluster::journal_epoch(epoch)))) {
        auto unseal = [ctx, respond, topic, partition, part, epoch, fail] {
          ask<int64_t>(*ctx.system, part, ctx.timeout, [ctx, respond, topic, partition, epoch](int64_t& end) {
            log::get("reassigner")->info("move.confirmed topic={} partition={} log_end={} epoch={} again=true", topic,
                                         partition, end, epoch);
            respond(http_response::json(200, json{{"owner", ctx.broker_id}, {"log_end_offset", end},
                                                  {"already_confirmed", true}}.dump()));
          }, fail, seal_atom::value, false);
        };
        if (!ctx.shared || sealed_end < 0) {
          unseal();
          return;
        }
        // Shared storage: the destination may have confirmed by itself
        // (reassigner_log.cpp confirm_own_moves), and its own end check at
        // the new epoch may have failed or not run yet. The seal is lifted
        // only over a log that holds every sealed record.
        ask_bounds(ctx, part, [respond, sealed_end, unseal](int64_t, int64_t end, int64_t) {
          if (end < sealed_end) {
            respond(offset_mismatch(end, "log end is " + std::to_string(end) + ", the sealed end "
                                           + std::to_string(sealed_end)));
            return;
          }
          unseal();
        }, fail);
        return;
      }
    }
    if (ctx.shared) {
      confirm_shared(ctx, respond, topic, partition, part, at, expected, cutover_epoch);
      return;
    }
    auto take_ownership = [ctx, respond, topic, partition, part, at, fail](int64_t end) {
      auto unseal = [ctx, respond, topic, partition, part, end, fail](bool&) {
        ask<int64_t>(*ctx.system, part, ctx.timeout, [ctx, respond, topic, partition, end](int64_t&) {
          log::get("reassigner")->info("move.confirmed topic={} partition={} log_end={}", topic, partition, end);
          respond(http_response::json(200, json{{"owner", ctx.broker_id}, {"log_end_offset", end}}.dump()));
        }, fail, seal_atom::value, false);
      };
      // Owner since the cutover (checked above). Before taking writes it
      // bumps the owner epoch by a conditional entry at the epoch it holds
      // the partition at: should the source have taken the partition back
      // meanwhile (it gave up waiting, docs/metadata.md "Owner epochs"),
      // this entry is refused and the copy stays sealed. Exactly one of the
      // two applies, in log order.
      auto [owner, epoch] = ctx.owners->owner_and_epoch({topic, partition});
      if (owner != ctx.broker_id) {
        respond(http_response::error(409, "owner_changed", topic + "/" + std::to_string(partition)
                                                             + " is owned by " + owner + " now; this move has ended"));
        return;
      }
      ask<bool>(*ctx.system, ctx.state, ctx.timeout, unseal,
                [ctx, respond, topic, partition](const caf::error& e) {
                  owner_entry_refused(ctx, respond, topic, partition, e);
                },
                owner_atom::value, topic, partition, ctx.broker_id, at, epoch);
    };
    ask<int64_t>(*ctx.system, part, ctx.timeout, [ctx, respond, part, expected, log_start, take_ownership,
                                                  fail](int64_t& end) {
      if (end != expected) {
        respond(offset_mismatch(end, "log end is " + std::to_string(end) + ", the source's is "
                                       + std::to_string(expected)));
        return;
      }
      if (log_start < 0) {
        take_ownership(end);
        return;
      }
      // Durable before ownership is taken: the copy never serves what the
      // source deleted.
      ask<int64_t>(*ctx.system, part, ctx.timeout, [take_ownership, end](int64_t&) { take_ownership(end); }, fail,
                   delete_records_atom::value, log_start, true);
    }, fail, copy_atom::value, std::string{}, true);
  });
}

/// A failed or cancelled move: the destination discards its copy.
void cleanup(const move_context& ctx, http_request& req, const responder& respond) {
  auto local = route_partition(*ctx.catalog, req, respond);
  if (!local)
    return;
  json body;
  if (!object_body(req, respond, body))
    return;
  if (auto cleanup = cluster::move_cleanup_from_json(body); !cleanup) {
    respond(http_response::error(400, "invalid_request", cleanup.err().message));
    return;
  }
  auto topic = req.params["topic"];
  auto [partition, part] = *local;
  with_fence(*ctx.system, ctx.state, ctx.timeout, req, respond,
             [ctx, respond, topic, partition = partition, part = part](int64_t, const std::string&) {
    if (!owned_elsewhere(ctx, topic, partition)) {
      respond(owns_it(ctx, topic, partition));
      return;
    }
    auto fail = fail_with(respond);
    if (ctx.shared) {
      // Shared storage: the partition's files are every later epoch's
      // history (a destination that confirmed in place and was then taken
      // back may have written at the cutover's epoch: the source's takeover
      // read them): only the seal is lifted.
      ask<int64_t>(*ctx.system, part, ctx.timeout, [respond, topic, partition](int64_t& end) {
        log::get("reassigner")->info("move.cleaned topic={} partition={} copy=none", topic, partition);
        respond(http_response::json(200, json{{"log_end_offset", end}}.dump()));
      }, fail, seal_atom::value, false);
      return;
    }
    ask_bounds(ctx, part, [ctx, respond, topic, partition, part, fail](int64_t lo, int64_t, int64_t) {
      ask<int64_t>(*ctx.system, part, ctx.timeout, [ctx, respond, topic, partition, part, fail](int64_t& end) {
        // The source's own entries name the owner (the body's "owner" is
        // not written here: a late write could undo a later entry).
        ask<int64_t>(*ctx.system, part, ctx.timeout, [respond, topic, partition, end](int64_t&) {
          log::get("reassigner")->info("move.cleaned topic={} partition={}", topic, partition);
          respond(http_response::json(200, json{{"log_end_offset", end}}.dump()));
        }, fail, seal_atom::value, false);
      }, fail, reset_atom::value, lo);
    }, fail);
  });
}

}  // namespace

void add_move_destination_routes(router& r, const move_context& ctx) {
  r.add("POST", "/cluster/partitions/{topic}/{partition}/ensure",
        [ctx](http_request& req, responder respond) { ensure(ctx, req, respond); });
  r.add("POST", "/cluster/partitions/{topic}/{partition}/append",
        [ctx](http_request& req, responder respond) { append(ctx, req, respond); });
  r.add("POST", "/cluster/partitions/{topic}/{partition}/confirm",
        [ctx](http_request& req, responder respond) { confirm(ctx, req, respond); });
  r.add("POST", "/cluster/partitions/{topic}/{partition}/cleanup",
        [ctx](http_request& req, responder respond) { cleanup(ctx, req, respond); });
  r.add("POST", "/cluster/offsets", [ctx](http_request& req, responder respond) { merge_offsets(ctx, req, respond); });
}

}  // namespace moonmq::transport::move_detail
