#include "cluster/txn_coordinator.hpp"

#include <algorithm>

namespace moonmq::cluster {

namespace {

/// The highest epoch a fencing bump may reach (Kafka: Short.MaxValue - 1).
constexpr int16_t last_epoch = 32766;
/// InitProducerId hands out a new producer id instead of bumping past this,
/// so that a fencing abort always has an epoch left above the producer's.
constexpr int16_t last_init_epoch = last_epoch - 1;

txn_decision fail(txn_error e, std::string why) {
  txn_decision d;
  d.answer.error = e;
  d.answer.message = std::move(why);
  return d;
}

/// The producer id and epoch check every request but init makes.
/// `ending_ok`: an ending transaction is no error here (EndTxn judges it).
std::optional<txn_decision> check_producer(const txn_request& req, const std::optional<txn_record>& cur,
                                           bool ending_ok = false) {
  if (!cur || cur->producer_id != req.producer_id)
    return fail(txn_error::invalid_producer_id_mapping,
                "transactional id " + req.transactional_id + " does not have producer id "
                  + std::to_string(req.producer_id) + (cur ? " (it has " + std::to_string(cur->producer_id) + ")" : ""));
  if (cur->producer_epoch != req.producer_epoch)
    return fail(txn_error::invalid_producer_epoch,
                "producer epoch " + std::to_string(req.producer_epoch) + " of " + req.transactional_id
                  + " is not the current " + std::to_string(cur->producer_epoch) + " (fenced)");
  if (ending(*cur) && !ending_ok)
    return fail(txn_error::concurrent_transactions,
                "the last transaction of " + req.transactional_id + " is still ending (" + to_string(cur->state) + ")");
  return std::nullopt;
}

/// `r` as an open transaction: a finished one starts afresh at `now_ms`.
txn_record opened(txn_record r, int64_t now_ms) {
  if (r.state != txn_state::ongoing) {
    r.partitions.clear();
    r.groups.clear();
    r.offsets.clear();
    r.started_ms = now_ms;
    r.state = txn_state::ongoing;
  }
  return r;
}

txn_decision answer_with(txn_record next, const txn_record& cur) {
  txn_decision d;
  d.answer.producer_id = next.producer_id;
  d.answer.producer_epoch = next.producer_epoch;
  if (!(next == cur))
    d.write = std::move(next);
  return d;
}

}  // namespace

const char* to_string(txn_error e) {
  switch (e) {
    case txn_error::none: return "none";
    case txn_error::invalid_producer_id_mapping: return "invalid_producer_id_mapping";
    case txn_error::invalid_producer_epoch: return "invalid_producer_epoch";
    case txn_error::concurrent_transactions: return "concurrent_transactions";
    case txn_error::invalid_txn_state: return "invalid_txn_state";
    case txn_error::invalid_transaction_timeout: return "invalid_transaction_timeout";
    case txn_error::coordinator_not_available: return "coordinator_not_available";
    case txn_error::not_coordinator: return "not_coordinator";
  }
  return "none";
}

txn_decision decide(const txn_request& req, const std::optional<txn_record>& cur, int64_t now_ms,
                    int64_t new_producer_id, int32_t max_timeout_ms) {
  using k = txn_request::kind;
  switch (req.what) {
    case k::init: {
      if (req.timeout_ms <= 0 || req.timeout_ms > max_timeout_ms)
        return fail(txn_error::invalid_transaction_timeout,
                    "transaction.timeout.ms " + std::to_string(req.timeout_ms) + " is outside (0, "
                      + std::to_string(max_timeout_ms) + "]");
      if (cur && ending(*cur))
        return fail(txn_error::concurrent_transactions,
                    "the last transaction of " + req.transactional_id + " is still ending");
      txn_record next = cur.value_or(txn_record{});
      if (cur && cur->state == txn_state::ongoing) {
        // Fence the old producer: abort its transaction at a bumped epoch.
        auto aborting = fencing_abort(*cur);
        txn_decision d = fail(txn_error::concurrent_transactions,
                              "the open transaction of " + req.transactional_id + " is being aborted; retry");
        d.write = std::move(aborting);
        d.ends = true;
        return d;
      }
      if (!cur || cur->producer_epoch >= last_init_epoch) {
        next.producer_id = new_producer_id;
        next.producer_epoch = 0;
      } else {
        next.producer_epoch = static_cast<int16_t>(cur->producer_epoch + 1);
      }
      next.state = txn_state::empty;
      next.timeout_ms = req.timeout_ms;
      next.started_ms = 0;
      next.partitions.clear();
      next.groups.clear();
      next.offsets.clear();
      txn_decision d;
      d.answer.producer_id = next.producer_id;
      d.answer.producer_epoch = next.producer_epoch;
      d.write = std::move(next);
      return d;
    }
    case k::add_partitions: {
      if (auto bad = check_producer(req, cur))
        return *bad;
      auto next = opened(*cur, now_ms);
      for (const auto& p : req.partitions)
        next.partitions.push_back(p);
      std::sort(next.partitions.begin(), next.partitions.end());
      next.partitions.erase(std::unique(next.partitions.begin(), next.partitions.end()), next.partitions.end());
      return answer_with(std::move(next), *cur);
    }
    case k::add_offsets: {
      if (auto bad = check_producer(req, cur))
        return *bad;
      if (req.group.empty())
        return fail(txn_error::invalid_txn_state, "AddOffsetsToTxn names no group");
      auto next = opened(*cur, now_ms);
      if (std::find(next.groups.begin(), next.groups.end(), req.group) == next.groups.end()) {
        next.groups.push_back(req.group);
        std::sort(next.groups.begin(), next.groups.end());
      }
      return answer_with(std::move(next), *cur);
    }
    case k::offset_commit: {
      if (auto bad = check_producer(req, cur))
        return *bad;
      if (cur->state != txn_state::ongoing
          || std::find(cur->groups.begin(), cur->groups.end(), req.group) == cur->groups.end())
        return fail(txn_error::invalid_txn_state, "group " + req.group + " was not added to the open transaction of "
                                                    + req.transactional_id + " (AddOffsetsToTxn first)");
      auto next = *cur;
      for (auto o : req.offsets) {
        o.group = req.group;
        auto same = std::find_if(next.offsets.begin(), next.offsets.end(), [&](const txn_offset& x) {
          return x.group == o.group && x.topic == o.topic && x.partition == o.partition;
        });
        if (same != next.offsets.end())
          *same = std::move(o);
        else
          next.offsets.push_back(std::move(o));
      }
      return answer_with(std::move(next), *cur);
    }
    case k::end: {
      if (auto bad = check_producer(req, cur, true))
        return *bad;
      const auto want_done = req.commit ? txn_state::complete_commit : txn_state::complete_abort;
      const auto want_prep = req.commit ? txn_state::prepare_commit : txn_state::prepare_abort;
      if (cur->state == want_done)
        return answer_with(*cur, *cur);  // a retry of an EndTxn that completed
      if (cur->state == want_prep)
        return fail(txn_error::concurrent_transactions, "the transaction of " + req.transactional_id + " is ending");
      if (cur->state != txn_state::ongoing)
        return fail(txn_error::invalid_txn_state, std::string("EndTxn(") + (req.commit ? "commit" : "abort")
                                                    + ") of " + req.transactional_id + " in state " + to_string(cur->state));
      auto next = *cur;
      next.state = want_prep;
      auto d = answer_with(std::move(next), *cur);
      d.ends = true;
      return d;
    }
    case k::abort: {
      if (!cur || cur->state != txn_state::ongoing) {
        if (cur && ending(*cur))
          return fail(txn_error::concurrent_transactions, "the transaction of " + req.transactional_id + " is ending");
        return fail(txn_error::invalid_txn_state, "no open transaction of " + req.transactional_id
                                                    + (cur ? std::string(" (state ") + to_string(cur->state) + ")"
                                                           : std::string(" (unknown id)")));
      }
      txn_decision d;
      d.write = fencing_abort(*cur);
      d.answer = txn_answer{txn_error::none, d.write->producer_id, d.write->producer_epoch, {}};
      d.ends = true;
      return d;
    }
    case k::expire: {
      txn_decision d;
      if (cur)
        if (auto t = timed_out(*cur, now_ms)) {
          d.write = std::move(*t);
          d.ends = true;
        }
      return d;
    }
  }
  return fail(txn_error::invalid_txn_state, "unknown request");
}

txn_record completed(txn_record r) {
  r.state = r.state == txn_state::prepare_commit ? txn_state::complete_commit : txn_state::complete_abort;
  r.partitions.clear();
  r.groups.clear();
  r.offsets.clear();
  r.started_ms = 0;
  return r;
}

std::optional<txn_record> timed_out(const txn_record& r, int64_t now_ms) {
  if (r.state != txn_state::ongoing || now_ms - r.started_ms <= r.timeout_ms)
    return std::nullopt;
  return fencing_abort(r);
}

txn_record fencing_abort(const txn_record& r) {
  auto next = r;
  next.state = txn_state::prepare_abort;
  if (next.producer_epoch < last_epoch)
    next.producer_epoch = static_cast<int16_t>(next.producer_epoch + 1);
  next.offsets.clear();  // an abort commits none of them
  return next;
}

}  // namespace moonmq::cluster
