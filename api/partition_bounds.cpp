#include "api/partition_bounds.hpp"

#include <mutex>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "peers/peer_survey.hpp"
#include "util/fan_in.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

/// The rows of a gather_bounds, one per partition asked for.
using bounds_in = util::fan_in<std::vector<partition_bounds>>;

/// Stores partition `i`'s bounds, keeping the owner its row was given.
void set_row(const std::shared_ptr<bounds_in>& in, size_t i, partition_bounds b) {
  in->add([&](std::vector<partition_bounds>& rows) {
    b.owner = rows[i].owner;
    rows[i] = std::move(b);
  });
}

partition_bounds failed(std::string why) {
  partition_bounds b;
  b.error = std::move(why);
  return b;
}

}  // namespace

void gather_bounds(const client_context& ctx, std::vector<cluster::topic_partition> parts,
                   std::function<void(std::vector<partition_bounds>)> done) {
  // Every owner first: the answers below fill the rows from other threads.
  std::vector<partition_bounds> rows(parts.size());
  auto image = ctx.owners ? ctx.owners->get() : nullptr;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!image) {
      rows[i].owner = ctx.broker_id;
    } else if (auto it = image->find(parts[i]); it != image->end()) {
      rows[i].owner = it->second;
    }
  }
  std::vector<std::optional<std::string>> owners;
  for (const auto& r : rows)
    owners.push_back(r.owner);
  auto round = bounds_in::make(parts.size(), std::move(rows), [done = std::move(done)](std::vector<partition_bounds>& all) {
    done(std::move(all));
  });
  auto local = ctx.catalog->get();
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& tp = parts[i];
    if (!owners[i]) {
      set_row(round, i, failed("partition_offline"));
    } else if (*owners[i] != ctx.broker_id) {
      auto peer = ctx.peers->find(*owners[i]);
      if (!peer || !peer->client) {
        set_row(round, i, failed("owner_unreachable"));
        continue;
      }
      call_peer(*peer, "GET", "/cluster/partitions/" + tp.topic + "/" + std::to_string(tp.partition) + "/log-end", {},
                0, {}, ctx.timeout, [round, i](int status, json body, std::string) {
                  if (status != 200 || !body.is_object() || !body.contains("log_end_offset")) {
                    set_row(round, i, failed("owner_unreachable"));
                    return;
                  }
                  partition_bounds b;
                  b.log_start_offset = body.value("log_start_offset", int64_t{-1});
                  b.log_end_offset = body.value("log_end_offset", int64_t{-1});
                  b.size_bytes = body.value("size_bytes", int64_t{-1});
                  set_row(round, i, std::move(b));
                });
    } else if (auto t = local->find(tp.topic);
               t != local->end() && tp.partition >= 0
               && static_cast<size_t>(tp.partition) < t->second.partitions.size()) {
      ctx.system->spawn(
        [round, i](caf::event_based_actor* self, partition_actor a, std::chrono::milliseconds timeout) {
          self->request(a, timeout, bounds_atom::value)
            .then(
              [round, i](int64_t lo, int64_t hi, int64_t size) {
                partition_bounds b;
                b.log_start_offset = lo;
                b.log_end_offset = hi;
                b.size_bytes = size;
                set_row(round, i, std::move(b));
              },
              [round, i](caf::error& e) { set_row(round, i, failed(error_code_of(e))); });
        },
        t->second.partitions[static_cast<size_t>(tp.partition)], ctx.timeout);
    } else {
      set_row(round, i, failed("partition_offline"));
    }
  }
}

}  // namespace moonmq::transport
