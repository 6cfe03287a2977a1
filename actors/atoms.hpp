#pragma once
// Message tags shared by moonmq's actors (CAF 0.17 atoms, at most 10 chars).

#include <caf/atom.hpp>

namespace moonmq {

using enroll_atom = caf::atom_constant<caf::atom("enroll")>;  ///< join the registry
using list_atom = caf::atom_constant<caf::atom("list")>;      ///< list entries
using inspect_atom = caf::atom_constant<caf::atom("inspect")>;  ///< one entry in detail
using status_atom = caf::atom_constant<caf::atom("status")>;  ///< an actor's own state summary (JSON text)
using stop_atom = caf::atom_constant<caf::atom("stop")>;      ///< orderly shutdown
using append_atom = caf::atom_constant<caf::atom("append")>;  ///< append a batch to a partition
using read_atom = caf::atom_constant<caf::atom("read")>;      ///< read batches from a partition
using bounds_atom = caf::atom_constant<caf::atom("bounds")>;  ///< log-start, log-end, size
using loads_atom = caf::atom_constant<caf::atom("loads")>;    ///< bounds and counters of many partitions (read_loads)
using time_lookup_atom = caf::atom_constant<caf::atom("timelookup")>;  ///< offset for a timestamp
using flush_atom = caf::atom_constant<caf::atom("flush")>;    ///< group commit: fsync pending appends
using write_out_atom = caf::atom_constant<caf::atom("writeout")>;  ///< write held appends to their segment files
using retain_atom = caf::atom_constant<caf::atom("retain")>;  ///< run retention now
using copy_atom = caf::atom_constant<caf::atom("copy")>;      ///< append batches that keep their offsets
using reset_atom = caf::atom_constant<caf::atom("reset")>;    ///< discard a log and restart it at an offset
using seal_atom = caf::atom_constant<caf::atom("seal")>;      ///< stop (or resume) accepting produce
using repair_atom = caf::atom_constant<caf::atom("repair")>;  ///< cut a corrupt partition log at its damage
using marker_atom = caf::atom_constant<caf::atom("txnmarker")>;  ///< write a transaction marker (COMMIT/ABORT)
using lso_atom = caf::atom_constant<caf::atom("lso")>;      ///< a partition's last stable offset with its bounds
using delete_records_atom = caf::atom_constant<caf::atom("delrecords")>;  ///< advance a partition's log start (DeleteRecords)
using claim_atom = caf::atom_constant<caf::atom("claim")>;    ///< claim the next controller epoch
using observe_atom = caf::atom_constant<caf::atom("observe")>;  ///< check a request's controller epoch
using owner_atom = caf::atom_constant<caf::atom("owner")>;    ///< read or set a partition's owner
using get_atom = caf::atom_constant<caf::atom("get")>;        ///< read a value
using create_atom = caf::atom_constant<caf::atom("create")>;  ///< create a topic
using join_atom = caf::atom_constant<caf::atom("join")>;      ///< join a consumer group
using beat_atom = caf::atom_constant<caf::atom("beat")>;      ///< group heartbeat
using leave_atom = caf::atom_constant<caf::atom("leave")>;    ///< leave a consumer group
using commit_atom = caf::atom_constant<caf::atom("commit")>;  ///< commit group offsets
using offsets_atom = caf::atom_constant<caf::atom("offsets")>;  ///< fetch committed offsets
using tick_atom = caf::atom_constant<caf::atom("tick")>;      ///< periodic housekeeping
using grow_atom = caf::atom_constant<caf::atom("grow")>;      ///< add partitions to a topic
using move_atom = caf::atom_constant<caf::atom("move")>;      ///< queue a partition move
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;  ///< cancel a partition move
using merge_atom = caf::atom_constant<caf::atom("merge")>;    ///< merge pushed group offsets (higher wins)
using step_atom = caf::atom_constant<caf::atom("step")>;      ///< a move's next step or a peer's answer
using plan_atom = caf::atom_constant<caf::atom("plan")>;      ///< compute a balance plan now
using raft_atom = caf::atom_constant<caf::atom("raft")>;      ///< a received Raft wire message
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;    ///< create or grow a local copy the metadata log names
using delete_atom = caf::atom_constant<caf::atom("delete")>;  ///< delete a topic (cluster-wide, or a local copy)
using config_atom = caf::atom_constant<caf::atom("config")>;  ///< change the dynamic balancer settings
using propose_atom = caf::atom_constant<caf::atom("propose")>;  ///< propose a Raft log entry
using broker_atom = caf::atom_constant<caf::atom("broker")>;  ///< read or change a broker's standing (drain, remove)
using register_atom = caf::atom_constant<caf::atom("register")>;  ///< register a joining broker's endpoints
using txn_atom = caf::atom_constant<caf::atom("txn")>;        ///< a transaction's coordinator state or request
/// Shared storage: a newly applied image is to be followed (an I/O worker
/// opens or closes its shared partitions; a reassigner confirms its moves).
using follow_atom = caf::atom_constant<caf::atom("follow")>;
/// The destination half of a move (actors/move_destination.hpp): prepare
/// the copy, confirm it, or discard it.
using ensure_atom = caf::atom_constant<caf::atom("ensure")>;
using confirm_atom = caf::atom_constant<caf::atom("confirm")>;
using cleanup_atom = caf::atom_constant<caf::atom("cleanup")>;

}  // namespace moonmq
