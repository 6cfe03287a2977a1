#pragma once
// The broker actor: owns the topic catalogue (durable, topics.json) and the
// partition actors, and publishes them through a catalog_view.

#include <memory>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/catalog_view.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/image.hpp"
#include "actors/partition.hpp"
#include "actors/registry.hpp"
#include "dataplane/topic_catalog.hpp"
#include "dataplane/topic_config.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::dataplane::topic_config_changes)

namespace moonmq {

using broker_actor = caf::typed_actor<
  // Creates topic (name, partitions, config JSON text or ""). Replies true when
  // created, false when it already existed with that partition count; errors:
  // invalid_request (bad name, count or config; existing topic with another count).
  caf::replies_to<create_atom, std::string, int32_t, std::string>::with<bool>,
  // Grows topic to `count` partitions. Replies the new count; errors:
  // unknown_topic, invalid_request (not larger, over the limit).
  caf::replies_to<grow_atom, std::string, int32_t>::with<int32_t>,
  // Makes the local copy of a topic the metadata log holds (name, partition
  // count, config JSON text or "", index of the entry that created it)
  // exist with at least that many partitions and that config: creates it,
  // grows it, changes its config, or changes nothing; a copy not stamped
  // yet is stamped with that index.
  // Replies the local count; errors: invalid_request (bad name or count),
  // conflict topic_recreated (the local copy belongs to another creation of the
  // name: delete it first), storage_error. A config the log holds but this
  // build cannot read is logged and the defaults used.
  caf::replies_to<adopt_atom, std::string, int32_t, std::string, int64_t>::with<int32_t>,
  // Changes the config of a local topic copy (name, changes, replace:
  // dataplane::change_topic_config; docs/metadata.md "Topic
  // configuration"): saved in the catalogue, then given to every partition.
  // The metadata log's changes arrive through adopt; this is a standalone
  // broker's. Replies the new config (JSON text of the keys set); errors:
  // unknown_topic, invalid_request (naming the key), storage_error.
  caf::replies_to<config_atom, std::string, dataplane::topic_config_changes, bool>::with<std::string>,
  // Re-reads the configs of local copies (names) from the image, each over
  // the cluster's topic defaults, and applies those that differ with one
  // catalogue save: what a change of a cluster default needs for every copy
  // that inherits it (sync_local_topics sends it for copies that lack
  // nothing but their config). A copy of another creation, or a name the
  // image lacks, is left to the per-topic adopt. A failed save changes
  // nothing (logged; the next sync tries again).
  caf::reacts_to<config_atom, std::vector<std::string>>,
  // Deletes the local copy of a topic (docs/metadata.md "Deleting a
  // topic"): name, and the created_at the copy must have (-1 = any; a copy
  // with another is kept: it belongs to a later creation). The catalogue
  // marks it `deleting` (durably) first, then it leaves the catalog_view,
  // every partition closes and removes its directory, and the catalogue
  // forgets it. The broker handles nothing else meanwhile, so a later adopt
  // of the same name starts on clean directories. Replies false when there
  // is no such copy, true once it is gone; error storage_error when a
  // directory or the catalogue could not be written. A deletion cut short
  // (an error, a crash) stays marked: it is finished at the next start, or
  // by the next create or adopt of the name, which fails until it is.
  caf::replies_to<delete_atom, std::string, int64_t>::with<bool>,
  // The broker's summary (JSON text).
  caf::replies_to<status_atom>::with<std::string>>;

struct broker_settings {
  std::string broker_id;
  std::string data_dir;
  int64_t retention_check_ms = 30000;
  io_settings io;  ///< the I/O workers the broker's partitions run on
  /// With the metadata log: its applied image. An adopt takes a topic's
  /// config from the image as it is when the adopt runs, not from the
  /// message, so an adopt sent from an older image never undoes a newer
  /// config change (the image only moves forward).
  std::shared_ptr<owner_view> image;
  /// Storage.SharedDir (docs/shared-storage.md): partitions live there, each
  /// opened by the I/O workers at the owner epoch `image` names this broker
  /// owner at; empty = local storage in `data_dir`. Needs `image`.
  std::string shared_dir;
};

/// Makes `broker`'s local copies follow an applied image's `topics` and
/// `deleted` topics (read together: owner_view::topics_and_deleted)
/// (cluster::plan_topic_sync, docs/metadata.md "Deleting a topic"): sends
/// the deletion of every stale copy, then the adoption of every topic the
/// log holds at a count or stamp this broker lacks. Asynchronous and
/// idempotent (a deletion names the stamp it removes); messages sent by one
/// caller arrive in order, so a copy goes before its name is adopted again.
/// `groups` (when given) is told to forget the committed offsets of every
/// copy deleted (Kafka drops a deleted topic's offsets too). `defaults`:
/// the cluster's topic defaults the log's configs are read over (a copy
/// whose config differs from the result is adopted again).
void sync_local_topics(const broker_actor& broker, const catalog_view& local, const topic_image& topics,
                       const deleted_topic_map& deleted, const dataplane::topic_config& defaults,
                       const group_actor* groups);

/// Spawns the broker with an already loaded catalogue: it spawns (and
/// enrolls) one partition actor per partition, then publishes `view`.
broker_actor spawn_broker(caf::actor_system& sys, broker_settings settings, dataplane::topic_catalog catalog,
                          std::shared_ptr<catalog_view> view, registry_actor reg);

}  // namespace moonmq
