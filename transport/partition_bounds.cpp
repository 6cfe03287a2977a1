#include "transport/partition_bounds.hpp"

#include <mutex>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "peers/peer_survey.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

struct bounds_round {
  std::mutex mtx;
  std::vector<partition_bounds> rows;
  size_t left = 0;
  std::function<void(std::vector<partition_bounds>)> done;

  void set(size_t i, partition_bounds b) {
    std::unique_lock<std::mutex> lock{mtx};
    b.owner = rows[i].owner;
    rows[i] = std::move(b);
    if (--left != 0)
      return;
    lock.unlock();
    auto f = std::move(done);  // may hold the last reference to this round
    f(std::move(rows));
  }
};

partition_bounds failed(std::string why) {
  partition_bounds b;
  b.error = std::move(why);
  return b;
}

}  // namespace

void gather_bounds(const client_context& ctx, std::vector<cluster::topic_partition> parts,
                   std::function<void(std::vector<partition_bounds>)> done) {
  auto round = std::make_shared<bounds_round>();
  round->rows.resize(parts.size());
  round->left = parts.size();
  round->done = std::move(done);
  if (parts.empty()) {
    round->done({});
    return;
  }
  // Every owner first: the answers below fill the rows from other threads.
  auto image = ctx.owners ? ctx.owners->get() : nullptr;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!image) {
      round->rows[i].owner = ctx.broker_id;
    } else if (auto it = image->find(parts[i]); it != image->end()) {
      round->rows[i].owner = it->second;
    }
  }
  std::vector<std::optional<std::string>> owners;
  for (const auto& r : round->rows)
    owners.push_back(r.owner);
  auto local = ctx.catalog->get();
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& tp = parts[i];
    if (!owners[i]) {
      round->set(i, failed("partition_offline"));
    } else if (*owners[i] != ctx.broker_id) {
      auto peer = ctx.peers->find(*owners[i]);
      if (!peer || !peer->client) {
        round->set(i, failed("owner_unreachable"));
        continue;
      }
      call_peer(*peer, "GET", "/cluster/partitions/" + tp.topic + "/" + std::to_string(tp.partition) + "/log-end", {},
                0, {}, ctx.timeout, [round, i](int status, json body, std::string) {
                  if (status != 200 || !body.is_object() || !body.contains("log_end_offset")) {
                    round->set(i, failed("owner_unreachable"));
                    return;
                  }
                  partition_bounds b;
                  b.log_start_offset = body.value("log_start_offset", int64_t{-1});
                  b.log_end_offset = body.value("log_end_offset", int64_t{-1});
                  b.size_bytes = body.value("size_bytes", int64_t{-1});
                  round->set(i, std::move(b));
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
                round->set(i, std::move(b));
              },
              [round, i](caf::error& e) { round->set(i, failed(error_code_of(e))); });
        },
        t->second.partitions[static_cast<size_t>(tp.partition)], ctx.timeout);
    } else {
      round->set(i, failed("partition_offline"));
    }
  }
}

}  // namespace moonmq::transport
