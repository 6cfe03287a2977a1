// The operations on one partition's log an operator or a move asks for,
// beside appends and reads (actors/io_worker_impl.hpp): repair of a corrupt
// log, sealing for a move, and DeleteRecords.

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "actors/io_worker_impl.hpp"
#include "util/atomic_file.hpp"

namespace moonmq::io_worker_detail {

/// Repairs a log that open refused as corrupt and brings it online;
/// replies what was cut.
caf::result<std::string> repair(worker_ptr self, hosted& p) {
  const auto name = p.name();
  if (p.log)
    return make_coded_error(fault::conflict, "not_corrupt", "partition " + name + " is online: nothing to repair");
  if (!p.damage)
    return make_coded_error(fault::conflict, "not_corrupt", "partition " + name + " is offline but its log is not corrupt ("
                                                  + p.open_error + "); restart the node instead");
  if (p.settings.shared)  // the damage is in an earlier epoch's files, which no owner rewrites
    return make_coded_error(fault::conflict, "shared_storage", "partition " + name
                                                     + " is a corrupt shared partition: repairing one is not supported "
                                                       "yet (" + p.open_error + ")");
  storage::repair_result report;
  auto fixed = storage::partition_log::repair(dir_of(p.settings), log_config_of(self, p.settings), report);
  if (!fixed) {
    log::get("broker")->error("partition.repair_failed topic={} partition={} error=\"{}\"", p.settings.topic,
                              p.settings.partition, fixed.err().message);
    return storage_failure(fixed.err());
  }
  p.log.emplace(std::move(fixed.value()));
  {
    // A move's destination copy stays sealed through a repair too.
    std::error_code ec;
    p.durable_seal = std::filesystem::exists(seal_marker(p.log->dir()), ec);
    p.sealed = p.sealed || p.durable_seal;
  }
  p.damage.reset();
  p.open_error.clear();
  p.set_offline(false);
  nlohmann::json cuts = nlohmann::json::array();
  for (const auto& c : report.cuts)
    cuts.push_back({{"file", c.path},
                    {"position", c.position},
                    {"first_offset", c.first.value},
                    {"end_offset", c.end.value},
                    {"records", c.records},
                    {"bytes", c.bytes},
                    {"reason", c.reason}});
  log::get("broker")->warn("partition.repaired topic={} partition={} records_removed={} bytes_removed={} cuts={} "
                           "log_end={}",
                           p.settings.topic, p.settings.partition, report.records, report.bytes, report.cuts.size(),
                           p.log->log_end().value);
  return nlohmann::json{{"topic", p.settings.topic},
                        {"partition", p.settings.partition},
                        {"records_removed", report.records},
                        {"bytes_removed", report.bytes},
                        {"cuts", cuts},
                        {"log_start_offset", p.log->log_start().value},
                        {"log_end_offset", p.log->log_end().value},
                        {"online", true}}
    .dump();
}

/// Seals or unseals; a durable seal writes the marker (fsynced) before it is
/// reported, and any unseal removes it. Appends already taken are made
/// durable first, so the log end returned is final while sealed.
///
/// A shared partition (docs/shared-storage.md "Moves and failover") keeps
/// its marker in this broker's data directory (seal_marker_of), and may be
/// sealed or unsealed while dormant (no log: a move's destination before
/// its image names it owner, a source after its cutover): then only the
/// flag and the marker change and the reply is -1 (no log end here). The
/// seal outlives the epochs the worker opens and closes meanwhile.
caf::result<int64_t> seal(worker_ptr self, hosted& p, bool sealed, bool durable) {
  const bool shared = p.settings.shared;
  if (!p.log && !(shared && p.shared))
    return offline(p);
  // Everything appended, and a new log's own directory (which must survive
  // a crash before a marker inside it means anything), is synced first.
  if (sealed && durable && !shared)  // a log never written has no directory yet to hold the marker
    if (auto made = p.log->materialize(); !made)
      return make_error(errc::storage_error, "cannot create " + p.log->dir() + ": " + made.err().message);
  if (p.log) {
    flush_one(self, p);
    if (!p.log)  // the sync failed: the log went offline
      return offline(p);
  }
  auto marker = seal_marker_of(self, p);
  std::error_code ec;
  if (sealed && durable) {
    if (shared) {
      auto dir = std::filesystem::path(marker).parent_path();
      if (!std::filesystem::exists(dir, ec)) {
        std::filesystem::create_directories(dir, ec);
        if (!ec)
          ec = util::fsync_dir(dir.parent_path().string());
        if (ec)
          return make_error(errc::storage_error, "cannot create " + dir.string() + ": " + ec.message());
      }
    }
    // Its existence is the seal: the file is created, then its directory
    // entry made durable (one fsync; the text is a note for an operator).
    if (!std::filesystem::exists(marker, ec)) {
      std::ofstream(marker, std::ios::trunc) << "sealed by a partition move\n";
      if (!std::filesystem::exists(marker, ec))
        return make_error(errc::storage_error, "cannot create " + marker);
    }
    if (auto derr = util::fsync_dir(std::filesystem::path(marker).parent_path().string()))
      return make_error(errc::storage_error, "cannot write " + marker + ": " + derr.message());
  } else if (!sealed && std::filesystem::exists(marker, ec)) {
    std::filesystem::remove(marker, ec);
    // Synced: a marker a crash brought back would seal the partition again,
    // and once its move has left the log's image nothing lifts it.
    if (!ec)
      ec = util::fsync_dir(std::filesystem::path(marker).parent_path().string());
    if (ec)
      return make_error(errc::storage_error, "cannot remove " + marker + ": " + ec.message());
  }
  p.sealed = sealed;
  p.durable_seal = sealed && (durable || p.durable_seal);
  if (!p.durable_seal)
    drop_held_copies(p, make_error(errc::invalid_request, "copy: " + p.name() + " is no longer a move's sealed copy"));
  return p.log ? p.log->log_end().value : int64_t{-1};
}

caf::result<int64_t> delete_records(worker_ptr self, hosted& p, int64_t before, bool sealed_ok) {
  if (!p.log)
    return offline(p);
  // Deletes files later epochs read: only while this epoch is ours and
  // the lease holds (docs/shared-storage.md).
  if (p.shared && !p.shared->holds(p.settings.topic, p.settings.partition, p.epoch))
    return ownership_lost(p);
  if (before < -1)
    return make_error(errc::invalid_request, "delete records: the offset must be >= -1 (-1: the log end)");
  if (p.sealed && !sealed_ok)
    return make_error(errc::partition_moved, "partition " + p.name() + " is sealed for a move; retry at its owner");
  const auto end = p.log->log_end().value;
  if (before > end)
    return make_out_of_range(before, p.log->log_start().value, end);
  // Everything below the new log start is made durable first, through the
  // worker (a failed sync takes the partition offline and answers the
  // appends waiting for it).
  const auto target = before == -1 ? end : before;
  if (target > p.log->log_start().value && target > p.log->durable_offset().value) {
    flush_one(self, p);
    if (!p.log)
      return offline(p);
  }
  auto r = p.log->advance_log_start(storage::offset{before});
  if (!r) {
    if (r.err().code == storage::errc::offset_out_of_range)
      return make_out_of_range(before, r.err().log_start.value, r.err().log_end.value);
    return storage_failure(r.err());
  }
  log::get("broker")->info("partition.records_deleted topic={} partition={} log_start={}", p.settings.topic,
                           p.settings.partition, r->value);
  return r->value;
}

// --- a move's copied batches ------------------------------------------------

caf::expected<int64_t> copy_batches(worker_ptr self, hosted& p, std::string& batches, bool durable) {
  if (!p.log)
    return offline(p);
  // Only a sealed copy (a move's destination, sealed by its ensure) takes
  // batches with their offsets: a copy that serves producers never does.
  if (!batches.empty() && !p.durable_seal)
    return make_error(errc::invalid_request, "copy: " + p.settings.topic + "/" + std::to_string(p.settings.partition)
                                               + " is not sealed: it serves producers and takes no copied batches");
  std::string_view rest = batches;
  while (!rest.empty()) {
    auto size = storage::peek_batch_size(rest);
    if (!size || *size > rest.size())
      return make_error(errc::invalid_request,
                        "copy: truncated batch at byte " + std::to_string(batches.size() - rest.size()));
    auto r = p.log->append_with_offsets(rest.substr(0, *size));
    if (!r)
      return make_error(errc::invalid_request,
                        std::string("copy: ") + storage::to_string(r.err().code) + ": " + r.err().message);
    rest.remove_prefix(*size);
  }
  note_held(self, p);
  p.copied_since_writeback += static_cast<int64_t>(batches.size());
  if (durable) {
    ++self->state.fdatasyncs;
    p.copied_since_writeback = 0;
    if (auto synced = p.log->flush(); !synced)
      return take_offline(self, p, synced.err());
  } else if (p.copied_since_writeback >= copy_writeback_bytes) {
    p.copied_since_writeback = 0;
    if (auto started = p.log->start_writeback(); !started)
      log::get("storage")->warn("copy.writeback_failed topic={} partition={} error=\"{}\" msg=\"the bytes stay dirty; "
                                "the sync before cutover writes them\"",
                                p.settings.topic, p.settings.partition, started.err().message);
  }
  return p.log->log_end().value;
}

namespace {

caf::error not_at_end(const hosted& p, int64_t expected) {
  return make_out_of_range(expected, p.log->log_start().value, p.log->log_end().value);
}

void deliver(caf::typed_response_promise<int64_t>& promise, caf::expected<int64_t>&& r) {
  if (r)
    promise.deliver(*r);
  else
    promise.deliver(std::move(r.error()));
}

/// Applies the held copies whose turn has come, in offset order, and refuses
/// those the log end has passed.
void release_held(worker_ptr self, hosted& p) {
  while (!p.held_copies.empty()) {
    auto it = p.held_copies.begin();
    if (!p.log) {
      drop_held_copies(p, offline(p));
      return;
    }
    const auto end = p.log->log_end().value;
    if (it->first > end)
      return;
    auto expected = it->first;
    auto held = std::move(it->second);
    p.held_copies.erase(it);
    if (expected < end)
      held.promise.deliver(not_at_end(p, expected));
    else
      deliver(held.promise, copy_batches(self, p, held.batches, held.durable));
  }
}

}  // namespace

caf::result<int64_t> copy_at(worker_ptr self, hosted& p, int64_t expected, std::string& batches, bool durable) {
  if (!p.log) {
    drop_held_copies(p, offline(p));
    return offline(p);
  }
  const auto end = p.log->log_end().value;
  if (expected > end) {
    // Ahead of its turn: an earlier window's batch is still on its way.
    // Only batches wait, within the bound; anything else is answered now.
    if (batches.empty() || !p.durable_seal || p.held_copies.size() >= max_held_copies
        || p.held_copies.count(expected))
      return not_at_end(p, expected);
    auto promise = self->make_response_promise<int64_t>();
    p.held_copies.emplace(expected, held_copy{std::move(batches), durable, promise});
    return promise;
  }
  if (expected < end)
    return not_at_end(p, expected);
  auto r = copy_batches(self, p, batches, durable);
  if (!r)
    return r.error();
  auto out = *r;
  release_held(self, p);
  return out;
}

void drop_held_copies(hosted& p, const caf::error& why) {
  auto held = std::move(p.held_copies);
  p.held_copies.clear();
  for (auto& [expected, h] : held)
    h.promise.deliver(why);
}

}  // namespace moonmq::io_worker_detail
