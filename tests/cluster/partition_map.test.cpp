#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "cluster/partition_map.hpp"

using namespace moonmq::cluster;
using nlohmann::json;

namespace {

partition_report report(const std::string& topic, int32_t p, const std::string& reporter, const std::string& owner,
                        int64_t end = 0) {
  partition_report r;
  r.tp = topic_partition{topic, p};
  r.reporter = broker_id{reporter};
  r.owner = broker_id{owner};
  r.log_start_offset = end / 2;
  r.log_end_offset = end;
  r.size_bytes = end * 10;
  return r;
}

std::vector<std::string> ids(const std::vector<broker_id>& v) {
  std::vector<std::string> out;
  for (const auto& b : v)
    out.push_back(b.str());
  return out;
}

}  // namespace

TEST_CASE("merge: a broker reporting itself as owner wins over the others' copies", "[cluster][partition_map]") {
  auto merged = merge_partition_reports({report("t", 0, "b3", "b2", 7), report("t", 0, "b2", "b2", 40),
                                         report("t", 0, "b1", "b2", 9)});
  REQUIRE(merged.size() == 1);
  const auto& p = merged.at(topic_partition{"t", 0});
  CHECK(p.owner == broker_id{"b2"});
  CHECK_FALSE(p.conflict);
  CHECK(ids(p.holders) == std::vector<std::string>{"b1", "b2", "b3"});
  CHECK(p.log_end_offset == 40);
  CHECK(p.log_start_offset == 20);
  CHECK(p.size_bytes == 400);
}

TEST_CASE("merge: several self-owners (a topic created on each) give the lowest id and a conflict",
          "[cluster][partition_map]") {
  auto merged = merge_partition_reports({report("t", 1, "b3", "b3", 3), report("t", 1, "b2", "b2", 5)});
  const auto& p = merged.at(topic_partition{"t", 1});
  CHECK(p.owner == broker_id{"b2"});
  CHECK(p.conflict);
  CHECK(p.log_end_offset == 5);
}

TEST_CASE("merge: with no self-owner the owner most often named wins and ties go to the lowest id",
          "[cluster][partition_map]") {
  auto merged = merge_partition_reports({report("a", 0, "b1", "b9", 1), report("a", 0, "b2", "b8", 2),
                                         report("a", 0, "b3", "b9", 3), report("b", 0, "b4", "b9", 4),
                                         report("b", 0, "b3", "b7", 5)});
  const auto& a = merged.at(topic_partition{"a", 0});
  CHECK(a.owner == broker_id{"b9"});
  CHECK_FALSE(a.conflict);
  // b9 did not report: the bounds are the first holder's (b1).
  CHECK(a.log_end_offset == 1);
  const auto& b = merged.at(topic_partition{"b", 0});
  CHECK(b.owner == broker_id{"b7"});
  CHECK(ids(b.holders) == std::vector<std::string>{"b3", "b4"});
  CHECK(b.log_end_offset == 5);
}

TEST_CASE("merge: a broker reporting a partition twice counts once", "[cluster][partition_map]") {
  auto merged = merge_partition_reports({report("t", 0, "b1", "b5", 1), report("t", 0, "b1", "b5", 2),
                                         report("t", 0, "b1", "b5", 3), report("t", 0, "b2", "b6", 4)});
  const auto& p = merged.at(topic_partition{"t", 0});
  CHECK(ids(p.holders) == std::vector<std::string>{"b1", "b2"});
  CHECK(p.owner == broker_id{"b5"});  // one vote each: tie, lowest id
  CHECK(p.log_end_offset == 1);
}

TEST_CASE("merge: partitions come out in topic then partition order and nothing in gives nothing",
          "[cluster][partition_map]") {
  CHECK(merge_partition_reports({}).empty());
  auto merged = merge_partition_reports({report("z", 0, "b1", "b1"), report("a", 10, "b1", "b1"),
                                         report("a", 2, "b1", "b1")});
  std::vector<topic_partition> order;
  for (const auto& [tp, p] : merged)
    order.push_back(tp);
  CHECK(order == std::vector<topic_partition>{{"a", 2}, {"a", 10}, {"z", 0}});
}

TEST_CASE("parse_loads reads one /cluster/loads body with the broker as reporter", "[cluster][partition_map]") {
  auto body = json::parse(R"({"broker_id":"b2","partitions":[
    {"topic":"orders","partition":1,"owner":"b2","log_start_offset":3,"log_end_offset":10,"size_bytes":700,
     "bytes_in":1,"bytes_out":2,"records_in":3,"records_out":4},
    {"topic":"orders","partition":2,"owner":"b1","error":"timeout"}],"topics":[{"name":"orders","partitions":3}]})");
  auto reports = parse_loads(body);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].tp == topic_partition{"orders", 1});
  CHECK(reports[0].reporter == broker_id{"b2"});
  CHECK(reports[0].owner == broker_id{"b2"});
  CHECK(reports[0].log_start_offset == 3);
  CHECK(reports[0].log_end_offset == 10);
  CHECK(reports[0].size_bytes == 700);
  // A partition that did not answer still counts as held, with zero bounds.
  CHECK(reports[1].owner == broker_id{"b1"});
  CHECK(reports[1].log_end_offset == 0);
}

TEST_CASE("parse_loads skips malformed rows and refuses a malformed body", "[cluster][partition_map]") {
  auto body = json::parse(R"({"broker_id":"b1","partitions":[
    42, {"partition":0,"owner":"b1"}, {"topic":"a..b","partition":0,"owner":"b1"},
    {"topic":"t","partition":-1,"owner":"b1"}, {"topic":"t","partition":4294967296,"owner":"b1"},
    {"topic":"t","partition":"0","owner":"b1"}, {"topic":"t","partition":0},
    {"topic":"t","partition":0,"owner":"bad id"}, {"topic":"t","partition":0,"owner":"b1","log_end_offset":"9"},
    {"topic":"t","partition":5,"owner":"b3"}]})");
  auto reports = parse_loads(body);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].tp == topic_partition{"t", 5});
  CHECK(parse_loads(json::parse(R"({"partitions":[{"topic":"t","partition":0,"owner":"b1"}]})")).empty());
  CHECK(parse_loads(json::parse(R"({"broker_id":"","partitions":[]})")).empty());
  CHECK(parse_loads(json::parse(R"({"broker_id":"b1","partitions":{}})")).empty());
  CHECK(parse_loads(json::parse(R"([1,2])")).empty());
  CHECK(parse_loads(json(nullptr)).empty());
}
