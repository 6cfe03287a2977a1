#include "actors/broker.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "dataplane/topic_config.hpp"
#include "dataplane/topic_name.hpp"
#include "storage/partition_log.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

struct broker_state {
  broker_settings settings;
  std::optional<dataplane::topic_catalog> catalog;
  std::shared_ptr<catalog_view> view;
  registry_actor registry;
  std::shared_ptr<io_pool> io;  ///< the I/O workers holding the partition logs
  topic_map topics;
  static inline const char* name = "broker";
};

using self_ptr = broker_actor::stateful_pointer<broker_state>;

void spawn_partitions(self_ptr self, topic_handles& t, int32_t from, int32_t to) {
  for (int32_t p = from; p < to; ++p) {
    const auto& bs = self->state.settings;
    const bool shared = !bs.shared_dir.empty();
    partition_settings ps{shared ? bs.shared_dir : bs.data_dir, t.name, p, t.config, bs.retention_check_ms,
                          shared, t.created_at};
    auto actor = spawn_partition(self->system(), self->state.io, std::move(ps));
    self->link_to(actor);
    enroll(self->state.registry, caf::actor_cast<caf::actor>(actor), "partition " + t.name + "-" + std::to_string(p),
           "partition");
    t.partitions.push_back(actor);
  }
}

void publish(self_ptr self) {
  self->state.view->set(std::make_shared<const topic_map>(self->state.topics));
}

caf::error invalid(std::string msg) {
  return make_error(errc::invalid_request, std::move(msg));
}

/// Gives every partition of local topic `t` config `cfg` (saved in the
/// catalogue already).
void apply_config(topic_handles& t, const dataplane::topic_config& cfg) {
  t.config = cfg;
  for (const auto& p : t.partitions)
    caf::anon_send(p, config_atom::value, cfg.segment_bytes, cfg.retention_bytes, cfg.retention_ms);
  log::get("broker")->info("topic.config_changed topic={} config={}", t.name, dataplane::topic_config_text(cfg));
}

/// Gives local topic `t` config `cfg`: the catalogue first (durably), then
/// every partition. "" on success, else why the catalogue was not saved
/// (nothing changed then).
std::string set_config(self_ptr self, topic_handles& t, const dataplane::topic_config& cfg) {
  auto& st = self->state;
  auto entry = *st.catalog->find(t.name);
  auto before = entry;
  entry.config = cfg;
  st.catalog->put(entry);
  if (auto why = st.catalog->save(); !why.empty()) {
    st.catalog->put(before);
    return "cannot save the topic catalogue: " + why;
  }
  apply_config(t, cfg);
  publish(self);
  return {};
}

/// The config_atom batch of broker_actor: the image's configs of `names`
/// over the cluster's defaults, saved at once, then applied.
void reapply_configs(self_ptr self, const std::vector<std::string>& names) {
  auto& st = self->state;
  if (!st.settings.image)
    return;
  auto image = st.settings.image->topics();
  auto defaults = st.settings.image->topic_defaults().values;
  std::vector<dataplane::topic_entry> before;
  std::vector<std::pair<topic_handles*, dataplane::topic_config>> changed;
  for (const auto& name : names) {
    auto it = st.topics.find(name);
    auto t = image->find(name);
    if (it == st.topics.end() || t == image->end() || it->second.created_at != t->second.created_at)
      continue;
    dataplane::topic_config cfg;
    (void)dataplane::read_topic_config_lenient(t->second.config, cfg, defaults);  // the adopt logs what it skips
    if (dataplane::topic_config_text(it->second.config) == dataplane::topic_config_text(cfg))
      continue;
    auto entry = *st.catalog->find(name);
    before.push_back(entry);
    entry.config = cfg;
    st.catalog->put(entry);
    changed.emplace_back(&it->second, cfg);
  }
  if (changed.empty())
    return;
  if (auto why = st.catalog->save(); !why.empty()) {
    for (auto& e : before)
      st.catalog->put(std::move(e));
    log::get("broker")->error("topic.config_save_failed topics={} error=\"{}\"", changed.size(), why);
    return;
  }
  for (auto& [t, cfg] : changed)
    apply_config(*t, cfg);
  publish(self);
}

/// Finishes a deletion the catalogue marks `deleting` (no partition actor of
/// it runs any more): removes every partition directory, then the entry.
/// "" once the name is free (also when there was nothing to finish), else why not.
std::string finish_deletion(self_ptr self, const std::string& name) {
  auto& st = self->state;
  const auto* entry = st.catalog->find(name);
  if (!entry || !entry->deleting)
    return {};
  for (int32_t p = 0; p < entry->partitions; ++p) {
    auto dir = storage::partition_dir(st.settings.data_dir, name, p);
    if (auto removed = storage::partition_log::remove(dir); !removed)
      return "cannot remove " + dir + ": " + removed.err().message;
  }
  st.catalog->erase(name);
  if (auto why = st.catalog->save(); !why.empty())
    return "cannot save the topic catalogue: " + why;
  log::get("broker")->info("topic.deleted topic={}", name);
  return {};
}

broker_actor::behavior_type broker_fn(self_ptr self, broker_settings settings, dataplane::topic_catalog catalog,
                                      std::shared_ptr<catalog_view> view, registry_actor reg) {
  auto& init = self->state;
  init.settings = std::move(settings);
  init.catalog.emplace(std::move(catalog));
  init.view = std::move(view);
  init.registry = reg;
  auto io = init.settings.io;
  if (io.data_dir.empty())
    io.data_dir = init.settings.data_dir;
  if (!init.settings.shared_dir.empty()) {
    io.image = init.settings.image;
    io.broker_id = init.settings.broker_id;
  }
  init.io = spawn_io_pool(self->system(), io, &reg);
  // Deletions a crash interrupted are finished before anything opens.
  std::vector<std::string> deleting;
  for (const auto& [name, entry] : init.catalog->topics())
    if (entry.deleting)
      deleting.push_back(name);
  for (const auto& name : deleting)
    if (auto why = finish_deletion(self, name); !why.empty())
      log::get("broker")->error("topic.delete_failed topic={} error=\"{}\"", name, why);
  for (const auto& [name, entry] : init.catalog->topics()) {
    if (entry.deleting)
      continue;  // still being deleted: never served, retried by the next create or adopt
    auto& t = init.topics[name];
    t.name = name;
    t.config = entry.config;
    t.created_at = entry.created_at;
    spawn_partitions(self, t, 0, entry.partitions);
  }
  publish(self);
  log::get("broker")->info("broker.started broker={} topics={}", init.settings.broker_id, init.topics.size());
  return {
    [self](create_atom, std::string& name, int32_t partitions, std::string& config_json) -> caf::result<bool> {
      auto& st = self->state;
      if (auto why = dataplane::check_topic_name(name); !why.empty())
        return invalid(why);
      if (partitions < 1 || partitions > dataplane::max_partitions)
        return invalid("partitions must be between 1 and " + std::to_string(dataplane::max_partitions) + ", got "
                       + std::to_string(partitions));
      dataplane::topic_config cfg;
      if (!config_json.empty())
        if (auto why = dataplane::parse_topic_config(config_json, cfg); !why.empty())
          return invalid(why);
      if (auto it = st.topics.find(name); it != st.topics.end()) {
        auto have = static_cast<int32_t>(it->second.partitions.size());
        if (have != partitions)
          return invalid("topic " + name + " already exists with " + std::to_string(have) + " partitions");
        return false;
      }
      if (auto why = finish_deletion(self, name); !why.empty())
        return make_error(errc::storage_error, "topic " + name + " is still being deleted: " + why);
      st.catalog->put({name, partitions, cfg});
      if (auto why = st.catalog->save(); !why.empty()) {
        log::get("broker")->error("topic.save_failed topic={} error=\"{}\"", name, why);
        return make_error(errc::storage_error, "cannot save the topic catalogue: " + why);
      }
      auto& t = st.topics[name];
      t.name = name;
      t.config = cfg;
      spawn_partitions(self, t, 0, partitions);
      publish(self);
      log::get("broker")->info("topic.created topic={} partitions={}", name, partitions);
      return true;
    },
    [self](grow_atom, std::string& name, int32_t count) -> caf::result<int32_t> {
      auto& st = self->state;
      auto it = st.topics.find(name);
      if (it == st.topics.end())
        return make_error(errc::unknown_topic, "unknown topic " + name);
      auto have = static_cast<int32_t>(it->second.partitions.size());
      if (count <= have)
        return invalid("count must be larger than the current " + std::to_string(have) + " partitions");
      if (count > dataplane::max_partitions)
        return invalid("count must be at most " + std::to_string(dataplane::max_partitions));
      st.catalog->put({name, count, it->second.config, it->second.created_at});
      if (auto why = st.catalog->save(); !why.empty())
        return make_error(errc::storage_error, "cannot save the topic catalogue: " + why);
      spawn_partitions(self, it->second, have, count);
      publish(self);
      log::get("broker")->info("topic.grown topic={} partitions={}", name, count);
      return count;
    },
    [self](adopt_atom, std::string& name, int32_t partitions, std::string& config_json,
           int64_t created_at) -> caf::result<int32_t> {
      auto& st = self->state;
      if (auto why = dataplane::check_topic_name(name); !why.empty())
        return invalid(why);
      if (partitions < 1 || partitions > dataplane::max_partitions)
        return invalid("partitions must be between 1 and " + std::to_string(dataplane::max_partitions));
      auto it = st.topics.find(name);
      if (it != st.topics.end() && it->second.created_at != 0 && created_at != 0 && it->second.created_at != created_at)
        return make_coded_error(fault::conflict, "topic_recreated",
                                "the local copy of " + name + " belongs to the topic created at log index "
                                  + std::to_string(it->second.created_at) + ", not " + std::to_string(created_at));
      if (it == st.topics.end())
        if (auto why = finish_deletion(self, name); !why.empty())
          return make_error(errc::storage_error, "topic " + name + " is still being deleted: " + why);
      // The log's config, also for a copy that exists (a change through
      // the log reaches every copy this way), read from the image as it is
      // now when there is one. What this build cannot read of it (a newer
      // version's keys) is skipped, the rest applied.
      // Keys the topic does not set take the cluster's defaults.
      std::string config_text = config_json;
      dataplane::topic_config defaults;
      if (st.settings.image) {
        auto image = st.settings.image->topics();
        if (auto t = image->find(name); t != image->end() && t->second.created_at == created_at)
          config_text = t->second.config;
        defaults = st.settings.image->topic_defaults().values;
      }
      dataplane::topic_config cfg;
      if (auto skipped = dataplane::read_topic_config_lenient(config_text, cfg, defaults); !skipped.empty())
        log::get("broker")->error("topic.config_unreadable topic={} skipped=\"{}\" msg=\"the other keys apply\"", name,
                                  skipped);
      if (it != st.topics.end()
          && dataplane::topic_config_text(it->second.config) != dataplane::topic_config_text(cfg))
        if (auto why = set_config(self, it->second, cfg); !why.empty())
          return make_error(errc::storage_error, why);
      if (it != st.topics.end() && static_cast<int32_t>(it->second.partitions.size()) >= partitions) {
        if (it->second.created_at == 0 && created_at != 0) {  // stamped once, on the first adopt that knows it
          auto entry = *st.catalog->find(name);
          entry.created_at = created_at;
          st.catalog->put(entry);
          if (auto why = st.catalog->save(); !why.empty())
            return make_error(errc::storage_error, "cannot save the topic catalogue: " + why);
          it->second.created_at = created_at;
          publish(self);
        }
        return static_cast<int32_t>(it->second.partitions.size());
      }
      st.catalog->put({name, partitions, cfg, created_at});
      if (auto why = st.catalog->save(); !why.empty())
        return make_error(errc::storage_error, "cannot save the topic catalogue: " + why);
      auto& t = st.topics[name];
      auto have = static_cast<int32_t>(t.partitions.size());
      t.name = name;
      t.config = cfg;
      t.created_at = created_at;
      spawn_partitions(self, t, have, partitions);
      publish(self);
      log::get("broker")->info("topic.adopted topic={} partitions={} had={}", name, partitions, have);
      return partitions;
    },
    [self](config_atom, std::string& name, dataplane::topic_config_changes& changes,
           bool replace) -> caf::result<std::string> {
      auto& st = self->state;
      auto it = st.topics.find(name);
      if (it == st.topics.end())
        return make_error(errc::unknown_topic, "unknown topic " + name);
      std::string text;
      if (auto why = dataplane::change_topic_config(dataplane::topic_config_overrides(it->second.config), changes,
                                                    replace, text);
          !why.empty())
        return invalid(why);
      dataplane::topic_config cfg;
      (void)dataplane::parse_topic_config(text.empty() ? "{}" : text, cfg);  // checked by change_topic_config
      if (auto why = set_config(self, it->second, cfg); !why.empty())
        return make_error(errc::storage_error, why);
      return text;
    },
    [self](config_atom, std::vector<std::string>& names) { reapply_configs(self, names); },
    [self](delete_atom, std::string& name, int64_t created_at) -> caf::result<bool> {
      auto& st = self->state;
      auto it = st.topics.find(name);
      if (it == st.topics.end() || (created_at != -1 && it->second.created_at != created_at))
        return false;
      // The intent first, durably: from here a crash finishes the deletion
      // at the next start instead of reopening what is left.
      auto entry = *st.catalog->find(name);
      entry.deleting = true;
      st.catalog->put(entry);
      if (auto why = st.catalog->save(); !why.empty()) {
        entry.deleting = false;
        st.catalog->put(entry);
        return make_error(errc::storage_error, "cannot save the topic catalogue: " + why);
      }
      auto handles = std::move(it->second.partitions);
      st.topics.erase(it);
      publish(self);  // no request path reaches the copy from here on
      auto rp = self->make_response_promise<bool>();
      auto left = std::make_shared<size_t>(handles.size());
      auto failed = std::make_shared<std::string>();
      auto finish = [self, rp, name, failed]() mutable {
        if (failed->empty())
          *failed = finish_deletion(self, name);  // the directories are gone: forget the entry
        if (!failed->empty()) {
          log::get("broker")->error("topic.delete_failed topic={} error=\"{}\"", name, *failed);
          rp.deliver(make_error(errc::storage_error, *failed));
          return;
        }
        rp.deliver(true);
      };
      if (handles.empty()) {
        finish();
        return rp;
      }
      // Awaited, without a timeout (a local actor that always answers): the
      // broker takes no other message (an adopt of the same name above all)
      // until every partition has closed its log and removed its directory.
      for (auto& p : handles) {
        self->unlink_from(p);
        self->request(p, caf::infinite, delete_atom::value)
          .await([left, finish](bool) mutable { if (--*left == 0) finish(); },
                 [left, finish, failed](caf::error& e) mutable {
                   if (failed->empty())
                     *failed = message_of(e);
                   if (--*left == 0)
                     finish();
                 });
      }
      return rp;
    },
    [self](status_atom) {
      nlohmann::json topics = nlohmann::json::object();
      for (const auto& [name, t] : self->state.topics)
        topics[name] = t.partitions.size();
      return nlohmann::json{{"broker_id", self->state.settings.broker_id},
                            {"data_dir", self->state.settings.data_dir},
                            {"topics", topics}}
        .dump();
    },
  };
}

}  // namespace

void sync_local_topics(const broker_actor& broker, const catalog_view& local, const topic_image& topics,
                       const deleted_topic_map& deleted, const dataplane::topic_config& defaults,
                       const group_actor* groups) {
  auto copies = local_copies(*local.get());
  auto plan = cluster::plan_topic_sync(copies, log_copies(topics, defaults), deleted);
  for (const auto& [name, created_at] : plan.remove) {
    caf::anon_send(broker, delete_atom::value, name, created_at);
    if (groups)
      caf::anon_send(*groups, delete_atom::value, name, copies.at(name).partitions);
  }
  // Copies that lack nothing but their config (a change of a cluster
  // default reaches every copy that inherits it) take it in one message,
  // with one catalogue save; the others are adopted one by one.
  std::vector<std::string> reconfigure;
  for (const auto& name : plan.adopt) {
    const auto& t = topics.at(name);
    auto c = copies.find(name);
    if (c != copies.end() && c->second.created_at != 0 && c->second.created_at == t.created_at
        && c->second.partitions >= t.partitions)
      reconfigure.push_back(name);
    else
      caf::anon_send(broker, adopt_atom::value, name, t.partitions, t.config, t.created_at);
  }
  if (!reconfigure.empty())
    caf::anon_send(broker, config_atom::value, std::move(reconfigure));
}

broker_actor spawn_broker(caf::actor_system& sys, broker_settings settings, dataplane::topic_catalog catalog,
                          std::shared_ptr<catalog_view> view, registry_actor reg) {
  auto b = sys.spawn(broker_fn, std::move(settings), std::move(catalog), std::move(view), reg);
  enroll(reg, caf::actor_cast<caf::actor>(b), "broker", "broker");
  return b;
}

}  // namespace moonmq
