#pragma once
// Client appends handed straight to the I/O worker of each partition.
//
// A produce request that names many partitions (a Kafka client spreading
// records over 1,000 partitions sends about one record per partition per
// request) would otherwise cost a request/response pair per partition
// through a dispatcher, the partition actor and the worker, each with a
// request timeout in CAF's clock thread: about seven thread wake-ups per
// partition, which is where a broker's CPU went (docs/storage.md "Threads,
// group commit and file descriptors"). append_direct sends one message per
// I/O worker for all of that worker's appends of the call; the worker
// appends them in order, and calls each append's callback once its sync
// round made it durable (acks=leader) or at once (acks=none, or an error).
//
// Order: CAF keeps the order of messages one sender enqueues to one
// mailbox. Appends of one call, and of calls that do not overlap (the
// handlers of one Asio strand, as a Kafka connection's requests are, docs/
// kafka.md "pipelining"), reach each partition in the order handed over,
// so request N's appends land before request N+1's, as Kafka's
// per-connection order promises and idempotent producers' sequence numbers
// expect.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/partition.hpp"
#include "storage/record_batch.hpp"

namespace moonmq {

/// One append for append_direct: the batch and acks of append_atom.
struct direct_append {
  partition_actor dest;
  std::string batch;     ///< one v2 record batch; the partition assigns its offsets
  bool durable = true;   ///< acks=leader: answered after the sync round that makes it durable
  std::function<void(int64_t)> ok;  ///< called with the base offset
  /// Called with the errors of append_atom (partition.hpp), or
  /// sec::request_receiver_down when the partition or its worker stopped
  /// before the append was answered (it was not acknowledged).
  std::function<void(const caf::error&)> fail;
  /// verified: `batch` passed batch_view::parse(batch, true) (as
  /// kafka::validate_produce_records checks it); the worker then checks its
  /// framing only (storage::batch_check). An append without a route (see
  /// append_direct) is checked in full.
  storage::batch_check check = storage::batch_check::full;
};

/// Sends every append in `appends` to the I/O worker holding its partition:
/// one message per worker. Exactly one of `ok` or `fail` is called per
/// append, on the worker's thread or another CAF thread (callbacks must not
/// block). There is no timeout: a worker answers each append after its next
/// sync round, and an append still unanswered when its worker stops fails.
/// A `dest` with no route (a partition actor that exited, or an actor that
/// is not one of an I/O pool's partitions) gets one append_atom request
/// with `timeout` instead, outside the order above: an exited partition
/// answers it with an error at once.
void append_direct(caf::actor_system& sys, std::vector<direct_append> appends, std::chrono::milliseconds timeout);

/// A partition's numbers for `GET /cluster/loads` (docs/cluster-api.md):
/// bounds (offsets; size in bytes of its segment and index files) and the
/// traffic counters since its log opened (bytes and records, whole batches
/// for reads).
struct partition_load {
  std::string error;  ///< non-empty: offline or stopped (bounds and counters are absent)
  int64_t log_start = 0;
  int64_t log_end = 0;
  int64_t size_bytes = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t records_in = 0;
  uint64_t records_out = 0;
};

/// Reads the numbers of every partition in `partitions` from the I/O
/// workers holding them, one request per worker (the routes of
/// append_direct), and calls `done` once with one entry per partition, in
/// order, on a CAF thread (or at once on this one when no partition has a
/// worker). A partition that exited gets an error entry; so do the
/// partitions of a worker that does not answer within `timeout`.
void read_loads(caf::actor_system& sys, const std::vector<partition_actor>& partitions,
                std::chrono::milliseconds timeout, std::function<void(std::vector<partition_load>&)> done);

}  // namespace moonmq
