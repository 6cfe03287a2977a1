#include "transport/local_loads.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

struct loads_round {
  json body;
  std::vector<partition_actor> partitions;  ///< index = row in body["partitions"]
  size_t pending = 0;  ///< answers still awaited (two per partition); touched by one actor only
  std::function<void(json)> done;

  void fail(size_t row, const std::string& what, const caf::error& e) {
    auto& r = body["partitions"][row];
    auto msg = message_of(e);
    auto text = what + ": " + (msg.empty() ? caf::to_string(e) : msg);
    r["error"] = r.contains("error") ? r["error"].get<std::string>() + "; " + text : text;
    finish_one();
  }
  void finish_one() {
    if (--pending == 0) {
      auto finish = std::move(done);
      finish(std::move(body));
    }
  }
};

void loads_actor(caf::event_based_actor* self, std::shared_ptr<loads_round> round, std::chrono::milliseconds timeout) {
  for (size_t i = 0; i < round->partitions.size(); ++i) {
    const auto& part = round->partitions[i];
    self->request(part, timeout, bounds_atom::value)
      .then(
        [round, i](int64_t lo, int64_t hi, int64_t size) {
          auto& r = round->body["partitions"][i];
          r["log_start_offset"] = lo;
          r["log_end_offset"] = hi;
          r["size_bytes"] = size;
          round->finish_one();
        },
        [round, i](caf::error& e) { round->fail(i, "bounds", e); });
    self->request(part, timeout, status_atom::value)
      .then(
        [round, i](std::string& text) {
          auto status = json::parse(text, nullptr, false);
          auto& r = round->body["partitions"][i];
          // An offline partition has no counters; its bounds request reports the error.
          for (const char* key : {"bytes_in", "bytes_out", "records_in", "records_out"})
            if (status.is_object() && status.contains(key) && status[key].is_number_integer())
              r[key] = status[key];
          round->finish_one();
        },
        [round, i](caf::error& e) { round->fail(i, "status", e); });
  }
}

}  // namespace

void collect_local_loads(caf::actor_system& sys, std::shared_ptr<const topic_map> topics,
                         std::shared_ptr<const owner_map> owners, std::string broker_id,
                         std::chrono::milliseconds timeout, std::function<void(json)> done) {
  auto round = std::make_shared<loads_round>();
  json rows = json::array();
  json topic_list = json::array();
  for (const auto& [name, t] : *topics) {
    topic_list.push_back(json{{"name", name}, {"partitions", t.partitions.size()}});
    for (size_t p = 0; p < t.partitions.size(); ++p) {
      // In a cluster the image names the owner, and a partition it does not
      // name is nobody's (null: readers skip it); a standalone broker owns all.
      json owner = broker_id;
      if (owners) {
        auto it = owners->find(cluster::topic_partition{name, static_cast<int32_t>(p)});
        owner = it != owners->end() ? json(it->second) : json(nullptr);
      }
      rows.push_back(json{{"topic", name}, {"partition", p}, {"owner", std::move(owner)}});
      round->partitions.push_back(t.partitions[p]);
    }
  }
  round->body = json{{"broker_id", broker_id}, {"partitions", std::move(rows)}, {"topics", std::move(topic_list)}};
  if (round->partitions.empty()) {
    done(std::move(round->body));
    return;
  }
  round->pending = 2 * round->partitions.size();
  round->done = std::move(done);
  sys.spawn(loads_actor, round, timeout);
}

}  // namespace moonmq::transport
