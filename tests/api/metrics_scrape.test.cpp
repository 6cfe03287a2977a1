// The families GET /metrics computes at each scrape (api/metrics_scrape.hpp):
// partition bounds, group lag only where the partition is owned here, moves
// by state with every state listed, brokers by standing.

#include <catch2/catch.hpp>

#include "api/metrics_scrape.hpp"

using namespace moonmq;
using namespace moonmq::transport;

namespace {

const metrics::sample_family* family(const std::vector<metrics::sample_family>& fams, const std::string& name) {
  for (const auto& f : fams)
    if (f.name == name)
      return &f;
  return nullptr;
}

/// The value of the series of `name` with labels `l`; nullopt when absent.
std::optional<double> value(const std::vector<metrics::sample_family>& fams, const std::string& name,
                            const metrics::labels& l) {
  auto f = family(fams, name);
  if (!f)
    return std::nullopt;
  for (const auto& [labels, v] : f->samples)
    if (labels == l)
      return v;
  return std::nullopt;
}

}  // namespace

TEST_CASE("partition and lag series cover the partitions owned here only", "[metrics]") {
  scrape_input in;
  in.partitions = {{"orders", 0, 5, 100, 4096}, {"orders", 2, 0, 7, 512}};
  in.committed = std::vector<committed_offset>{{"billing", "orders", 0, 60},
                                               {"billing", "orders", 1, 3},   // owned elsewhere
                                               {"billing", "orders", 2, 9},   // ahead of the log end: 0
                                               {"audit", "orders", 0, 100}};
  auto fams = scrape_families(in);
  CHECK(value(fams, "moonmq_partition_log_start_offset", {{"topic", "orders"}, {"partition", "0"}}) == 5.0);
  CHECK(value(fams, "moonmq_partition_log_end_offset", {{"topic", "orders"}, {"partition", "0"}}) == 100.0);
  CHECK(value(fams, "moonmq_partition_size_bytes", {{"topic", "orders"}, {"partition", "2"}}) == 512.0);
  CHECK_FALSE(value(fams, "moonmq_partition_log_end_offset", {{"topic", "orders"}, {"partition", "1"}}));
  CHECK(value(fams, "moonmq_group_lag", {{"group", "billing"}, {"topic", "orders"}, {"partition", "0"}}) == 40.0);
  CHECK(value(fams, "moonmq_group_lag", {{"group", "billing"}, {"topic", "orders"}, {"partition", "2"}}) == 0.0);
  CHECK_FALSE(value(fams, "moonmq_group_lag", {{"group", "billing"}, {"topic", "orders"}, {"partition", "1"}}));
  CHECK(value(fams, "moonmq_group_lag", {{"group", "audit"}, {"topic", "orders"}, {"partition", "0"}}) == 0.0);
  CHECK(value(fams, "moonmq_group_total_lag", {{"group", "billing"}}) == 40.0);
  CHECK(value(fams, "moonmq_group_total_lag", {{"group", "audit"}}) == 0.0);
  // No journal and no image (a standalone broker): no move or broker families.
  CHECK_FALSE(family(fams, "moonmq_reassignments"));
  CHECK_FALSE(family(fams, "moonmq_brokers"));
}

TEST_CASE("without the coordinator's answer the lag families are left out, not zero", "[metrics]") {
  scrape_input in;
  in.partitions = {{"t", 0, 0, 3, 10}};
  auto fams = scrape_families(in);
  CHECK_FALSE(family(fams, "moonmq_group_lag"));
  CHECK_FALSE(family(fams, "moonmq_group_total_lag"));
  CHECK(value(fams, "moonmq_partition_log_end_offset", {{"topic", "t"}, {"partition", "0"}}) == 3.0);
}

TEST_CASE("moves are counted by state with every state listed", "[metrics]") {
  scrape_input in;
  in.move_states = std::vector<std::string>{"copying", "copying", "cutover", "done", "failed", "bogus"};
  auto fams = scrape_families(in);
  CHECK(value(fams, "moonmq_reassignments", {{"state", "copying"}}) == 2.0);
  CHECK(value(fams, "moonmq_reassignments", {{"state", "cutover"}}) == 1.0);
  CHECK(value(fams, "moonmq_reassignments", {{"state", "done"}}) == 1.0);
  CHECK(value(fams, "moonmq_reassignments", {{"state", "queued"}}) == 0.0);
  CHECK(value(fams, "moonmq_reassignments", {{"state", "rolling_back"}}) == 0.0);
  CHECK(family(fams, "moonmq_reassignments")->samples.size() == 9);
  CHECK(value(fams, "moonmq_reassignments_in_progress", {}) == 3.0);
}

TEST_CASE("brokers are counted by standing, a removed broker is neither active nor fenced", "[metrics]") {
  auto standing = std::make_shared<broker_standing>();
  standing->draining = {"b2"};
  standing->removed = {"b3"};
  standing->fenced = {"b1", "b3"};
  scrape_input in;
  in.brokers = broker_census{{"b1", "b2", "b3", "b4"}, standing};
  auto fams = scrape_families(in);
  CHECK(value(fams, "moonmq_brokers", {{"state", "active"}}) == 2.0);
  CHECK(value(fams, "moonmq_brokers", {{"state", "draining"}}) == 1.0);
  CHECK(value(fams, "moonmq_brokers", {{"state", "removed"}}) == 1.0);
  CHECK(value(fams, "moonmq_fenced_brokers", {}) == 1.0);
}
