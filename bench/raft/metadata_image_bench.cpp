// metadata_image_bench: what applying a metadata-log snapshot costs a broker
// (docs/metadata.md): the snapshot of an image with `--partitions` owners
// (topics of `--per-topic` partitions, owners spread over 3 brokers, plus
// some moved partitions and fenced brokers) is encoded once as it travels
// and is stored; then, `--runs` times, decoded (JSON parse, strict
// snapshot_from_json), loaded into an ownership_state and turned into the
// owner map every request path reads. Also the cost of applying the topic
// entries one by one. Prints min / p50 / max in ms.
//
//   metadata_image_bench [--partitions 100000] [--per-topic 1000] [--runs 20]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "raft/ownership_state.hpp"

namespace {

using namespace moonmq::raft;
using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

void print(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("%-44s min %8.2f ms  p50 %8.2f ms  max %8.2f ms\n", what, v.front(), v[v.size() / 2], v.back());
}

}  // namespace

int main(int argc, char** argv) {
  int partitions = 100000, per_topic = 1000, runs = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--partitions"))
      partitions = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--per-topic"))
      per_topic = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs"))
      runs = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "metadata_image_bench [--partitions N] [--per-topic N] [--runs N]\n");
      return 2;
    }
  }
  per_topic = std::max(1, std::min(per_topic, max_topic_partitions));
  runs = std::max(1, runs);
  const char* brokers[] = {"b1", "b2", "b3"};

  // The log: one create entry per topic (each from a broker in turn), then a
  // move of every tenth partition, a config change and a fence.
  std::vector<log_entry> log;
  uint64_t index = 0;
  int topics = (partitions + per_topic - 1) / per_topic;
  for (int t = 0; t < topics; ++t) {
    int n = std::min(per_topic, partitions - t * per_topic);
    log.push_back({term{1}, log_index{++index},
                   topic_entry{"topic-" + std::to_string(t), n, node_id{brokers[t % 3]}, "", false}});
  }
  for (int p = 0; p < partitions; p += 10)
    log.push_back({term{1}, log_index{++index},
                   owner_entry{"topic-" + std::to_string(p / per_topic), p % per_topic, node_id{brokers[(p + 1) % 3]}}});
  log.push_back({term{1}, log_index{++index}, config_entry{R"({"DryRun":false})"}});
  log.push_back({term{1}, log_index{++index}, broker_entry{node_id{"b3"}, broker_change::fence, {}, false}});

  std::vector<double> apply_ms;
  ownership_state built;
  for (int r = 0; r < runs; ++r) {
    ownership_state s;
    auto t0 = clock_type::now();
    for (const auto& e : log)
      if (!s.apply(e).ok())
        return 1;
    apply_ms.push_back(ms_since(t0));
    if (r == 0)
      built = s;
  }
  auto text = to_json(built.to_snapshot()).dump();
  std::printf("image: %zu topics, %zu owners, %zu fenced; snapshot %.1f MiB; %zu log entries\n",
              built.topics().size(), built.owners().size(), built.fenced().size(),
              static_cast<double>(text.size()) / (1024.0 * 1024.0), log.size());

  std::vector<double> decode_ms, load_ms, publish_ms, total_ms;
  for (int r = 0; r < runs; ++r) {
    auto t0 = clock_type::now();
    auto parsed = nlohmann::json::parse(text);
    auto snap = snapshot_from_json(parsed);
    if (!snap.ok())
      return 1;
    decode_ms.push_back(ms_since(t0));
    auto t1 = clock_type::now();
    ownership_state s;
    s.load(*snap);
    load_ms.push_back(ms_since(t1));
    // What the raft node publishes for the request paths (actors/raft_node.cpp publish_image).
    auto t2 = clock_type::now();
    std::map<std::pair<std::string, int32_t>, std::string> owners;
    for (const auto& [tp, owner] : s.owners())
      owners.emplace_hint(owners.end(), std::make_pair(tp.topic, tp.partition), owner.str());
    publish_ms.push_back(ms_since(t2));
    total_ms.push_back(ms_since(t0));
    if (owners.size() != built.owners().size())
      return 1;
  }
  // The same image in the format written before per-topic owners (one
  // object per partition at the top level), decoded in the same run.
  auto legacy_json = to_json(built.to_snapshot());
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [tp, owner] : built.owners())
    rows.push_back({{"topic", tp.topic}, {"partition", tp.partition}, {"owner", owner.str()}});
  legacy_json["owners"] = std::move(rows);
  legacy_json.erase("brokers");
  for (auto& t : legacy_json["topics"])
    t.erase("owners");
  auto legacy = legacy_json.dump();
  std::vector<double> legacy_ms;
  for (int r = 0; r < runs; ++r) {
    auto t0 = clock_type::now();
    auto snap = snapshot_from_json(nlohmann::json::parse(legacy));
    if (!snap.ok() || snap->owners.size() != built.owners().size())
      return 1;
    legacy_ms.push_back(ms_since(t0));
  }
  print("apply the log entries one by one", apply_ms);
  print("older format (a row per partition): parse", legacy_ms);
  print("snapshot: JSON parse + strict decode", decode_ms);
  print("snapshot: load into the image", load_ms);
  print("snapshot: build the published owner map", publish_ms);
  print("snapshot applied, in all", total_ms);
  auto p50 = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("older format: %.1f MiB; its parse p50 is %.1fx this format's; applied p50 %.1f ms against the "
              "100 ms aim (%.2fx)\n",
              static_cast<double>(legacy.size()) / (1024.0 * 1024.0), p50(legacy_ms) / p50(decode_ms), p50(total_ms),
              p50(total_ms) / 100.0);
  return 0;
}
