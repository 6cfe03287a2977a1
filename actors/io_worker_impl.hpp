#pragma once
// Private to the I/O workers (actors/io_worker*.cpp)
// and the partition actors that forward to them (actors/partition.cpp):
// what a worker holds per partition, its state, and the functions its two
// halves share. The public interface is actors/partition.hpp.
//
// io_worker.cpp      the worker's behaviour: open, append, read, seal,
//                    repair, retention, close, status
// io_worker_rounds.cpp durability: group commit rounds, the write-ahead
//                    log and its checkpoints, write-behind
// io_worker_admin.cpp  operations on one log besides appends and reads:
//                    repair, seal, DeleteRecords
// io_worker_txn.cpp  transactions: markers, reads with an isolation level,
//                    the last stable offset
// partition.cpp      the pool of workers and the partition actors

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/direct_append_impl.hpp"
#include "actors/partition.hpp"
#include "actors/shared_mode.hpp"
#include "storage/file_deleter.hpp"
#include "storage/group_commit.hpp"
#include "storage/partition_log.hpp"
#include "storage/wal.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

// Local messages only (worker and partition actors of one process).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::partition_settings)

namespace moonmq::io_worker_detail {

using open_atom = caf::atom_constant<caf::atom("open")>;    ///< a worker opens a partition's log
using close_atom = caf::atom_constant<caf::atom("close")>;  ///< a worker closes a partition's log
/// A worker's WAL commit ran on its committer thread (the commit's number).
using committed_atom = caf::atom_constant<caf::atom("walcommit")>;
/// Shared storage: a worker looks for a newly published image (and opens or
/// closes its shared partitions as it says, follow_atom) this often.
constexpr std::chrono::milliseconds follow_period{100};

/// An append waiting for its sync round: answered to its requester
/// (append_atom) or through a direct append's callbacks (append_direct).
struct pending_ack {
  caf::typed_response_promise<int64_t> promise;
  std::unique_ptr<detail::direct_reply> direct;
  int64_t base = 0;
  /// When it began to wait: the produce latency the broker adds
  /// (storage::process_latency().produce, docs/balancer.md "Slow brokers").
  std::chrono::steady_clock::time_point queued = std::chrono::steady_clock::now();

  void deliver(const caf::error& failure) {
    if (direct && failure)
      direct->deliver(failure);
    else if (direct)
      direct->deliver(base);
    else if (failure)
      promise.deliver(failure);
    else
      promise.deliver(base);
  }
};

struct counters {
  uint64_t bytes_in = 0, bytes_out = 0, records_in = 0, records_out = 0, batches_in = 0, fsyncs = 0;
};

/// Duration of each group commit round's sync (moonmq_storage_sync_round_seconds).
metrics::histogram& sync_histogram();
/// Partitions of this process whose log is offline (moonmq_offline_partitions).
metrics::gauge& offline_gauge();
/// Partitions handed to a worker whose log is not open yet (moonmq_partitions_opening).
metrics::gauge& opening_gauge();

/// A copied batch list waiting for the log end to reach its offset.
struct held_copy {
  std::string batches;
  bool durable = false;
  caf::typed_response_promise<int64_t> promise;
};

/// How many copied batch lists one partition holds ahead of its log end:
/// the source's window (Cluster.MoveWindow, at most 16; actors/
/// reassigner_copy.cpp) less the one at the log end, with room to spare.
/// One more is refused as not at the log end.
constexpr size_t max_held_copies = 16;

/// A move's destination starts the writeback of its copy every this many
/// bytes (partition_log::start_writeback), so the page cache never holds a
/// large unsynced copy whose writeback would stall the disk, and every
/// produce fsync on it, at cutover; the copy never waits for an fsync.
constexpr int64_t copy_writeback_bytes = 4LL << 20;

/// One partition held by a worker: its log and everything the partition
/// answers from.
struct hosted {
  uint64_t id = 0;
  partition_settings settings;
  std::optional<storage::partition_log> log;
  std::string open_error;
  std::optional<storage::damage> damage;  ///< why open refused the log, when it was corrupt
  bool counted_offline = false;           ///< included in moonmq_offline_partitions
  std::vector<pending_ack> pending;       ///< appends waiting for the next sync round
  bool sealed = false;
  /// Sealed as a move's destination copy (the marker exists): only then are
  /// copied batches taken, and client fetches are refused (the log may be
  /// incomplete until the move confirms).
  bool durable_seal = false;
  counters c;
  metrics::counter* m_bytes_in = nullptr;
  metrics::counter* m_records_in = nullptr;
  metrics::counter* m_bytes_out = nullptr;
  metrics::counter* m_records_out = nullptr;
  std::list<uint64_t>::iterator lru_pos;  ///< in the worker's lru while the log holds an fd
  bool in_lru = false;
  bool in_waiting = false;  ///< listed in the worker's `waiting` for the next round
  bool in_held = false;     ///< listed in the worker's `held`: its log holds write-behind bytes
  /// Opened before its directory existed and not synced since: the
  /// directory itself may not survive a crash, so its rounds sync the log
  /// (which makes the directory durable), never only the WAL.
  bool fresh = false;
  /// Entries of this partition are in the worker's WAL since its last
  /// checkpoint: its segments may hold less than what was acknowledged.
  bool in_wal = false;
  /// Entries added to the WAL since its last commit (listed in the worker's
  /// wal_uncommitted).
  bool wal_uncommitted = false;
  /// Log end when the WAL last committed this partition's entries: every
  /// offset below it survives a crash, whatever its segments hold.
  int64_t wal_durable_end = 0;
  int64_t wal_added_end = 0;  ///< log end after its last entry added to the WAL
  /// An append skipped the WAL (a large acks=leader batch) since the last
  /// sync of this partition's segment: every later append skips it too
  /// until one, so that its entries in the WAL never jump over a batch
  /// that only its segment holds (replay continues a log only from its
  /// end), and its rounds sync its segment.
  bool segment_sync_due = false;
  /// Appends of this partition wait in the WAL commit under way (the
  /// worker's in_flight round): its file is kept open meanwhile (touch).
  bool in_commit = false;
  /// A move's copied batches that reached this destination ahead of their
  /// turn (the source keeps a window of appends in flight over several
  /// connections), by the offset they start at; applied once the log end
  /// reaches it (copy_at).
  std::map<int64_t, held_copy> held_copies;
  /// Bytes copied into this partition since its writeback was last started.
  int64_t copied_since_writeback = 0;
  /// Shared storage: the worker's shared_mode (null for a local partition),
  /// and the owner epoch `log` was opened at; 0 while the partition is
  /// dormant (the image names another owner: no log, nothing written).
  const shared_mode* shared = nullptr;
  int64_t epoch = 0;
  /// The image's epoch whose held takeover was logged (shared_mode::held).
  int64_t held_logged = 0;

  hosted() = default;
  hosted(const hosted&) = delete;
  hosted& operator=(const hosted&) = delete;

  ~hosted() {
    if (log) {
      if (auto st = log->close(); !st)
        moonmq::log::get("broker")->warn("partition.close_failed topic={} partition={} error=\"{}\"",
                                         settings.topic, settings.partition, st.err().message);
    }
    set_offline(false);
  }

  void set_offline(bool offline) {
    if (offline != counted_offline)
      offline_gauge().add(offline ? 1.0 : -1.0);
    counted_offline = offline;
  }

  std::string name() const { return settings.topic + "-" + std::to_string(settings.partition); }
};

/// Runs one I/O worker's WAL commits (storage::wal_writer::run_commit: one
/// pwrite and one fdatasync) on a thread of its own, one at a time, so
/// that the worker takes the next round's appends while a round's
/// fdatasync runs: the worker then writes and syncs side by side instead
/// of in turn (docs/storage.md "Pipelined commits"). When a commit ends
/// its result is kept and the worker is sent committed_atom with the
/// commit's number; `wait` hands the result over (blocking until then).
class wal_committer {
 public:
  /// Starts the thread. Throws std::system_error when none can be made.
  /// `before` (tests only, may be null) runs before each commit.
  wal_committer(caf::actor_addr worker, std::function<void()> before);
  /// Lets a commit under way end, then joins the thread.
  ~wal_committer();
  wal_committer(const wal_committer&) = delete;
  wal_committer& operator=(const wal_committer&) = delete;
  /// Runs `job` as commit number `seq`; no other commit may be under way.
  void start(storage::wal_writer::commit_job job, uint64_t seq);
  /// The result of the commit started last, once it ended.
  storage::status wait();

 private:
  void run();
  caf::actor_addr worker_;
  std::function<void()> before_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<storage::wal_writer::commit_job> job_;
  uint64_t seq_ = 0;
  std::optional<storage::status> result_;
  bool stopping_ = false;
  std::thread thread_;
};

/// A group commit round whose WAL commit runs on the committer: the
/// appends it answers, taken out of their partitions' `pending`, and the
/// WAL end each partition reaches once it is durable.
struct wal_round {
  uint64_t seq = 0;
  std::vector<std::pair<uint64_t, std::vector<pending_ack>>> acks;  ///< partition id, its appends in order
  std::vector<std::pair<uint64_t, int64_t>> durable_ends;           ///< partition id, its wal_added_end
  size_t bytes = 0;
  std::chrono::steady_clock::time_point started;
};

struct worker_state {
  std::unordered_map<uint64_t, std::unique_ptr<hosted>> parts;
  std::vector<uint64_t> waiting;  ///< partitions with pending acks, in arrival order
  bool flush_scheduled = false;
  std::vector<std::unique_ptr<hosted>> closing;  ///< closed by the next close round
  bool close_scheduled = false;
  std::list<uint64_t> lru;  ///< partitions whose log holds an fd, most recent first
  size_t fd_budget = 1024;
  int index = 0;
  /// Shared by the pool's workers; held by each so it outlives their logs.
  std::shared_ptr<storage::file_deleter> deleter;
  /// This worker's syncfs descriptors, opened at its start (see
  /// storage::syncfs_handles: one per worker, so each sees every error).
  std::unique_ptr<storage::syncfs_handles> syncfs;
  uint64_t rounds = 0, syncfs_calls = 0, fdatasyncs = 0, fds_released = 0;
  std::string data_dir;
  /// The worker's write-ahead log (storage/wal.hpp); empty when
  /// Storage.WriteAheadLog is off or after it stopped (wal_stopped says why).
  std::optional<storage::wal_writer> wal;
  std::string wal_stopped;
  int64_t wal_checkpoint_bytes = 64LL << 20;
  size_t wal_max_batch_bytes = 64u << 10;  ///< io_settings::wal_max_batch_bytes
  uint64_t wal_commits = 0, wal_checkpoints = 0, wal_bytes = 0;
  std::vector<uint64_t> wal_uncommitted;  ///< partitions with entries in the WAL's next commit
  /// The round whose WAL commit runs on `committer` (at most one), and
  /// whether another round was asked for meanwhile (it runs once that
  /// commit ends; flush_scheduled stays set until then).
  std::optional<wal_round> in_flight;
  bool round_after_commit = false;
  uint64_t commit_seq = 0, pipelined_commits = 0;
  /// No committer thread could be made: every round commits in place for
  /// the rest of the run (logged once).
  bool committer_failed = false;
  /// Made at the first pipelined commit (a worker without WAL traffic
  /// costs no thread). Declared after `wal`, so it is destroyed first: its
  /// destructor lets a commit under way, which uses the WAL's descriptor
  /// and buffer, end before they go.
  std::unique_ptr<wal_committer> committer;
  std::function<void()> before_wal_commit;  ///< io_settings::before_wal_commit
  /// Topic and partition of every entry in the WAL's files (or buffer)
  /// since its last checkpoint, hosted or not: a stopped WAL keeps its
  /// files, and a log deleted or reset since must never have them replayed
  /// into it (forget_wal_entries).
  std::set<std::pair<std::string, int32_t>> wal_names;
  /// A background write-back (start_writeback) runs; WAL file size when the
  /// last one started.
  std::shared_ptr<std::atomic<bool>> writeback_running = std::make_shared<std::atomic<bool>>(false);
  uint64_t writeback_at = 0;
  uint64_t writebacks = 0;
  /// Partitions whose log holds appends in memory (write-behind), written
  /// to their files by the next write_out_atom at the latest.
  std::vector<uint64_t> held;
  bool write_out_scheduled = false;
  uint64_t write_outs = 0;
  /// io_settings::write_behind_bytes: with the WAL on, a partition's active
  /// segment holds up to this many bytes of appends in memory and writes
  /// them in one pwrite instead of one per append. Measured with
  /// kafka_spread_bench (1,000 partitions, one 1 KiB record per partition
  /// per request): 7-8 µs of broker CPU per record against 12-13.
  size_t write_behind_bytes = 0;
  /// Shared storage (null without io_settings::image).
  std::unique_ptr<shared_mode> shared;
  const void* followed_image = nullptr;  ///< the owner map follow_images last acted on
  /// io_settings::write_behind_ms: held bytes reach their files at most
  /// this long after their append, so what a process crash can lose beyond
  /// the WAL's last commit (acks=none appends only) stays this short.
  int64_t write_behind_ms = 50;
  static inline const char* name = "io_worker";
};

using worker_ptr = caf::stateful_actor<worker_state>*;


/// Bytes of acks=none appends a worker's WAL buffers before a round
/// commits them on their own.
constexpr size_t wal_buffer_limit = 4u << 20;

// --- shared by the worker's two halves ------------------------------------------------

/// errc::storage_error carrying a storage error's code and message.
caf::error storage_failure(const storage::error& e);
/// errc::partition_offline naming why `p` is offline.
caf::error offline(const hosted& p);

/// A failed sync takes the partition offline until a restart, as a Kafka
/// broker takes a failed log dir offline: after a failed fsync the kernel
/// may have dropped the dirty pages, so a later fsync's success would prove
/// nothing, and an idempotent resend would be acknowledged against a batch
/// that is not on disk. Recovery at the next start keeps exactly what
/// reached the disk.
caf::error take_offline(worker_ptr self, hosted& p, const storage::error& e);
/// Stops the worker's WAL (its files stay and replay at the next start);
/// rounds then sync each partition's segments.
void stop_wal(worker_ptr self, const std::string& why);
/// Answers every append of `p` waiting for a sync: its base offset, or
/// `failure` when the sync failed. A shared partition's successes are
/// answered ownership_lost instead when shared_mode::holds fails.
void answer(hosted& p, const caf::error& failure);
/// unavailable ownership_lost (Kafka NOT_LEADER_OR_FOLLOWER): `p`'s appends were
/// written at an owner epoch this broker may no longer vouch for; the
/// client retries at the owner (an idempotent producer's resend is then
/// answered as a duplicate).
caf::error ownership_lost(const hosted& p);
/// Makes everything appended to `p` durable with its own fdatasync and
/// answers its waiting appends; a failure takes it offline.
void flush_one(worker_ptr self, hosted& p);
/// After a failed syncfs: every log of the worker written since its own
/// last fdatasync syncs its own file (see io_worker_rounds.cpp).
void sync_after_failed_syncfs(worker_ptr self);
/// Checkpoints the WAL (see io_worker_rounds.cpp); false when it could not.
bool wal_checkpoint(worker_ptr self);
/// Makes sure no WAL file will replay entries into `s`'s log (before a
/// delete or reset); false when that cannot be made durable.
bool forget_wal_entries(worker_ptr self, const partition_settings& s);
/// Lists `p` for the next write-out when its log holds bytes.
void note_held(worker_ptr self, hosted& p);
/// Writes every held append of the worker to its segment file.
void write_out_held(worker_ptr self);
/// One group commit round (see io_worker_rounds.cpp).
void sync_round(worker_ptr self);
/// Ends the round whose WAL commit runs on the committer with the
/// commit's result: answers its appends, or on a failure stops the WAL and
/// makes them durable by their segments.
void finish_commit(worker_ptr self, const storage::status& result);
/// Waits for the WAL commit under way, if any, and ends its round: what
/// a request must do before it closes, resets, seals, checkpoints or
/// otherwise needs every earlier append of the worker answered.
void drain_commit(worker_ptr self);
/// Holds `ack` until the next sync round.
void wait_for_round(worker_ptr self, hosted& p, pending_ack ack);
/// The answer of an append at `base` to `p`: now when it is durable
/// already, else after the next round.
caf::result<int64_t> ack_when_durable(worker_ptr self, hosted& p, int64_t base);

/// The marker of a durable seal: `<partition dir>/sealed`.
std::string seal_marker(const std::string& dir);
/// Where the marker of `p`'s durable seal lives: `<partition dir>/sealed`
/// for a local partition; for a shared one, in this broker's own data
/// directory, `<DataDir>/shared-seals/<topic>-<partition>~<created_at>`
/// (a seal is one broker's state: every broker sees the shared directory).
std::string seal_marker_of(worker_ptr self, const hosted& p);
/// The storage settings of a partition's log on this worker.
storage::log_config log_config_of(worker_ptr self, const partition_settings& s);
/// `<data_dir>/<topic>-<partition>`.
std::string dir_of(const partition_settings& s);
/// Marks `p` recently used and releases idle logs' file descriptors past
/// the worker's budget (io_worker.cpp).
void touch(worker_ptr self, hosted& p);
/// The admin route that repairs `s`'s log, named in offline errors.
std::string repair_route(const partition_settings& s);

// --- io_worker_open.cpp -------------------------------------------------------
/// Shared storage: brings `p` in line with the applied image before a
/// request uses it (closes an epoch that is over, opens the one the image
/// names). partition_moved when not owner, the offline error when the open
/// failed, else nothing; a local partition always nothing.
caf::error follow_image(worker_ptr self, hosted& p);
/// follow_image for every shared partition, once per published image.
void follow_images(worker_ptr self);
/// Opens (and recovers) the log of a newly assigned partition and adds it
/// to the worker; a shared one only when the image names this broker owner.
void open_partition(worker_ptr self, uint64_t id, partition_settings settings);

// --- io_worker_admin.cpp -----------------------------------------------------

/// Repairs a log that open refused as corrupt and brings it online;
/// replies what was cut (JSON text).
caf::result<std::string> repair(worker_ptr self, hosted& p);
/// Seals or unseals `p` (see partition_actor's seal_atom); replies the log end.
caf::result<int64_t> seal(worker_ptr self, hosted& p, bool sealed, bool durable);
/// Appends batches that keep their offsets to a sealed copy (a move's
/// destination); `durable` fsyncs first. Replies the new log end.
caf::expected<int64_t> copy_batches(worker_ptr self, hosted& p, std::string& batches, bool durable);
/// The same at exactly `expected`: now when it is the log end; held (and
/// answered once applied) when it is ahead and the partition holds fewer
/// than max_held_copies; otherwise offset_out_of_range with the bounds.
caf::result<int64_t> copy_at(worker_ptr self, hosted& p, int64_t expected, std::string& batches, bool durable);
/// Answers every held copy of `p` with `why` (the log was reset, unsealed,
/// closed or deleted).
void drop_held_copies(hosted& p, const caf::error& why);
/// DeleteRecords on `p` (see partition_actor's delete_records_atom);
/// replies the log start after the call.
caf::result<int64_t> delete_records(worker_ptr self, hosted& p, int64_t before, bool sealed_ok);

// --- io_worker.cpp, shared with io_worker_txn.cpp ----------------------------

/// Reads whole batches of `p` from `from` (partition_log::read), cut before
/// the first batch whose base offset is >= `below` when `below` >= 0;
/// `fetch` counts them as consumer traffic and refuses a move's unconfirmed
/// copy. Errors: partition_offline, partition_moved, offset_out_of_range
/// with the bounds, storage_error.
caf::expected<storage::read_result> read_log(hosted& p, int64_t from, int32_t max_bytes, bool fetch,
                                             int64_t below = -1);
/// Appends a batch to `p` (offsets assigned, WAL, write-behind) and
/// replies its base offset; `durable` after its sync round.
caf::result<int64_t> append_batch(worker_ptr self, hosted& p, std::string& batch, bool durable);

// --- io_worker_txn.cpp --------------------------------------------------------

/// Writes a transaction marker to `p` (see partition_actor's marker_atom),
/// durably; replies its offset.
caf::result<int64_t> write_marker(worker_ptr self, hosted& p, int64_t producer_id, int16_t producer_epoch, bool commit,
                                  int32_t coordinator_epoch);
/// A read with an isolation level (see partition_actor's five-element
/// read_atom): (batches, log_start, high watermark, last stable offset,
/// aborted transactions as [producer id, first offset] pairs).
caf::result<std::string, int64_t, int64_t, int64_t, std::vector<int64_t>> read_isolated(hosted& p, int64_t from,
                                                                                       int32_t max_bytes, bool fetch,
                                                                                       bool committed);
/// (log_start, high watermark, last stable offset) of `p`.
caf::result<int64_t, int64_t, int64_t> stable_bounds(hosted& p);
/// ListOffsets by timestamp on `p` (partition_actor's time_lookup_atom).
caf::result<int64_t, int64_t> time_lookup(hosted& p, int64_t timestamp, bool committed);

/// The behaviour of I/O worker `index` (io_worker.cpp).
caf::behavior worker_fn(worker_ptr self, int index, size_t fd_budget, std::shared_ptr<storage::file_deleter> deleter,
                        io_settings settings);

}  // namespace moonmq::io_worker_detail
