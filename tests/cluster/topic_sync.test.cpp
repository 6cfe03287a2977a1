#include <catch2/catch.hpp>

#include "cluster/topic_sync.hpp"

using moonmq::cluster::plan_topic_sync;
using moonmq::cluster::topic_copy;
using names = std::vector<std::string>;
using removals = std::vector<std::pair<std::string, int64_t>>;

TEST_CASE("local copies at the log's creation stay, missing ones are adopted", "[cluster][topic_sync]") {
  auto plan = plan_topic_sync({{"orders", {3, 9, ""}}}, {{"orders", {3, 9, ""}}, {"audit", {1, 12, ""}}}, {});
  CHECK(plan.remove.empty());
  CHECK(plan.adopt == names{"audit"});
  CHECK(plan.import.empty());
}

TEST_CASE("a copy below the log's count is adopted to grow it", "[cluster][topic_sync]") {
  auto plan = plan_topic_sync({{"orders", {3, 9, ""}}}, {{"orders", {6, 9, ""}}}, {});
  CHECK(plan.remove.empty());
  CHECK(plan.adopt == names{"orders"});
}

TEST_CASE("a stamped copy of a deleted topic is removed, not imported", "[cluster][topic_sync]") {
  auto plan = plan_topic_sync({{"orders", {3, 9, ""}}}, {}, {{"orders", 40}});
  CHECK(plan.remove == removals{{"orders", 9}});
  CHECK(plan.adopt.empty());
  CHECK(plan.import.empty());
  // The same without the tombstone (pruned): a stamped copy only ever
  // comes from the log, so it goes all the same.
  auto pruned = plan_topic_sync({{"orders", {3, 9, ""}}}, {}, {});
  CHECK(pruned.remove == removals{{"orders", 9}});
  CHECK(pruned.import.empty());
}

TEST_CASE("a copy of an earlier creation of the name is removed, then the new topic adopted", "[cluster][topic_sync]") {
  auto plan = plan_topic_sync({{"orders", {3, 9, ""}}}, {{"orders", {2, 50, ""}}}, {{"orders", 40}});
  CHECK(plan.remove == removals{{"orders", 9}});
  CHECK(plan.adopt == names{"orders"});
}

TEST_CASE("unstamped copies: stamped, removed or imported by what the log says of the name", "[cluster][topic_sync]") {
  std::map<std::string, topic_copy> local{{"kept", {2, 0, ""}}, {"gone", {2, 0, ""}}, {"legacy", {4, 0, ""}}, {"again", {1, 0, ""}}};
  std::map<std::string, topic_copy> topics{{"kept", {2, 7, ""}}, {"again", {1, 60, ""}}};
  std::map<std::string, int64_t> deleted{{"gone", 30}, {"again", 55}};
  auto plan = plan_topic_sync(local, topics, deleted);
  // "again" was deleted, then created anew: the unstamped copy predates that.
  CHECK(plan.remove == removals{{"again", 0}, {"gone", 0}});
  CHECK(plan.adopt == names{"again", "kept"});  // kept: to stamp it
  CHECK(plan.import == names{"legacy"});
}

TEST_CASE("a copy whose config differs from the log's is adopted to take the log's", "[cluster][topic_sync]") {
  topic_copy local{3, 9, R"({"retention.ms":-1})"};
  topic_copy changed{3, 9, R"({"retention.ms":60000})"};
  CHECK(plan_topic_sync({{"orders", local}}, {{"orders", changed}}, {}).adopt == names{"orders"});
  CHECK(plan_topic_sync({{"orders", local}}, {{"orders", local}}, {}).adopt.empty());
}
