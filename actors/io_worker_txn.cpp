// Transactions on an I/O worker's partitions (actors/io_worker_impl.hpp):
// writing COMMIT/ABORT markers, reads with an isolation level and the last
// stable offset (docs/transactions.md).

#include "actors/errors.hpp"
#include "actors/io_worker_impl.hpp"
#include "storage/record_batch.hpp"
#include "util/clock.hpp"

namespace moonmq::io_worker_detail {

caf::result<int64_t> write_marker(worker_ptr self, hosted& p, int64_t producer_id, int16_t producer_epoch, bool commit,
                                  int32_t coordinator_epoch) {
  auto batch = storage::make_control_batch(producer_id, producer_epoch,
                                           commit ? storage::control_commit : storage::control_abort,
                                           coordinator_epoch, util::wall_ms());
  if (!batch)
    return make_error(errc::invalid_request, "transaction marker: " + batch.err().message);
  // The append path of a produce with acks=leader: sealed and offline
  // partitions refuse it, the WAL and the group commit round make it
  // durable before the reply, and the log judges its epoch.
  return append_batch(self, p, *batch, true);
}

caf::result<std::string, int64_t, int64_t, int64_t, std::vector<int64_t>> read_isolated(hosted& p, int64_t from,
                                                                                       int32_t max_bytes, bool fetch,
                                                                                       bool committed) {
  if (!p.log)
    return offline(p);
  const auto lso = p.log->last_stable_offset();
  auto r = read_log(p, from, max_bytes, fetch, committed ? lso.value : -1);
  if (!r)
    return r.error();
  std::vector<int64_t> aborted;
  if (committed && !r->batches.empty()) {
    // The last offset returned: the end of the last whole batch.
    std::string_view rest = r->batches;
    storage::offset last{from};
    while (!rest.empty()) {
      auto h = storage::peek_batch_header(rest);
      if (!h)
        break;
      last = h->last;
      rest.remove_prefix(h->size);
    }
    for (const auto& a : p.log->txn().aborted_between(storage::offset{from}, last)) {
      aborted.push_back(a.producer_id);
      aborted.push_back(a.first.value);
    }
  }
  return caf::make_result(std::move(r->batches), r->log_start.value, r->log_end.value, lso.value,
                          std::move(aborted));
}

caf::result<int64_t, int64_t> time_lookup(hosted& p, int64_t timestamp, bool committed) {
  if (!p.log)
    return offline(p);
  if (timestamp < 0)
    return make_error(errc::invalid_request, "time lookup: the timestamp must not be negative");
  auto found = p.log->offset_for_timestamp(timestamp);
  if (!found)
    return storage_failure(found.err());
  // read_committed never finds a record at or past the last stable offset
  // (Kafka's Partition.fetchOffsetForTimestamp filters the same way).
  if (!*found || (committed && (*found)->off.value >= p.log->last_stable_offset().value))
    return caf::make_result(int64_t{-1}, int64_t{-1});
  return caf::make_result((*found)->off.value, (*found)->timestamp);
}

caf::result<int64_t, int64_t, int64_t> stable_bounds(hosted& p) {
  if (!p.log)
    return offline(p);
  return caf::make_result(p.log->log_start().value, p.log->log_end().value, p.log->last_stable_offset().value);
}

}  // namespace moonmq::io_worker_detail
