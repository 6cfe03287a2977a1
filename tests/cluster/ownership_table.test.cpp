#include <catch2/catch.hpp>

#include <fstream>

#include "cluster/ownership_table.hpp"
#include "tests/support/process.hpp"

using namespace moonmq::cluster;
using moonmq::test::temp_dir;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << text;
}

std::string file_in(const temp_dir& dir) {
  return dir.path() + "/" + ownership_table::file_name;
}

const topic_partition orders3{"orders", 3};

}  // namespace

TEST_CASE("a fresh data dir gives an empty table: every partition is owned locally", "[cluster][ownership]") {
  temp_dir dir;
  auto t = ownership_table::open(dir.path() + "/sub");
  REQUIRE(t.ok());
  CHECK(t->snapshot().empty());
  CHECK_FALSE(t->owner_of(orders3).has_value());
  CHECK(t->owner_or(orders3, broker_id{"b1"}) == broker_id{"b1"});
}

TEST_CASE("set_owner is durable and survives reopen with its epoch", "[cluster][ownership]") {
  temp_dir dir;
  {
    auto t = ownership_table::open(dir.path());
    REQUIRE(t.ok());
    REQUIRE(t->set_owner(orders3, broker_id{"b2"}, epoch{4}).ok());
    REQUIRE(t->set_owner({"payments", 0}, broker_id{"b3"}, epoch{4}).ok());
  }
  auto t = ownership_table::open(dir.path());
  REQUIRE(t.ok());
  CHECK(t->owner_of(orders3) == broker_id{"b2"});
  CHECK(t->owner_or(orders3, broker_id{"b1"}) == broker_id{"b2"});
  CHECK(t->entries().at(orders3).changed_at == epoch{4});
  CHECK(t->snapshot().size() == 2);
}

TEST_CASE("a change with a lower epoch than the entry is refused as stale, equal epochs pass",
          "[cluster][ownership]") {
  temp_dir dir;
  auto t = ownership_table::open(dir.path());
  REQUIRE(t.ok());
  REQUIRE(t->set_owner(orders3, broker_id{"b2"}, epoch{5}).ok());
  auto stale = t->set_owner(orders3, broker_id{"b1"}, epoch{4});
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.err().code == errc::stale_epoch);
  CHECK(stale.err().highest == epoch{5});
  CHECK(t->owner_of(orders3) == broker_id{"b2"});
  CHECK(t->set_owner(orders3, broker_id{"b1"}, epoch{5}).ok());  // same controller rolls back
  CHECK(t->owner_of(orders3) == broker_id{"b1"});
  // Another partition is not fenced by this row.
  CHECK(t->set_owner({"orders", 4}, broker_id{"b3"}, epoch{1}).ok());
}

TEST_CASE("clear returns the partition to its local holder and keeps the fence", "[cluster][ownership]") {
  temp_dir dir;
  {
    auto t = ownership_table::open(dir.path());
    REQUIRE(t.ok());
    REQUIRE(t->set_owner(orders3, broker_id{"b2"}, epoch{3}).ok());
    REQUIRE(t->clear(orders3, epoch{6}).ok());
    CHECK_FALSE(t->owner_of(orders3).has_value());
    CHECK(t->snapshot().empty());
  }
  auto t = ownership_table::open(dir.path());
  REQUIRE(t.ok());
  CHECK_FALSE(t->owner_of(orders3).has_value());
  auto stale = t->set_owner(orders3, broker_id{"b2"}, epoch{5});
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.err().code == errc::stale_epoch);
  CHECK(t->clear(orders3, epoch{5}).err().code == errc::stale_epoch);
}

TEST_CASE("replace_all swaps the whole table and raises the floor epoch", "[cluster][ownership]") {
  temp_dir dir;
  auto t = ownership_table::open(dir.path());
  REQUIRE(t.ok());
  REQUIRE(t->set_owner(orders3, broker_id{"b2"}, epoch{2}).ok());
  CHECK(t->replace_all({{{"x", 0}, broker_id{"b9"}}}, epoch{1}).err().code == errc::stale_epoch);
  REQUIRE(t->replace_all({{{"x", 0}, broker_id{"b9"}}, {{"x", 1}, broker_id{"b8"}}}, epoch{7}).ok());
  CHECK_FALSE(t->owner_of(orders3).has_value());
  CHECK(t->owner_of({"x", 1}) == broker_id{"b8"});
  CHECK(t->floor() == epoch{7});
  // A partition absent from the replacement is still fenced by the floor.
  CHECK(t->set_owner(orders3, broker_id{"b2"}, epoch{6}).err().code == errc::stale_epoch);
  CHECK(t->set_owner(orders3, broker_id{"b2"}, epoch{7}).ok());
  auto again = ownership_table::open(dir.path());
  REQUIRE(again.ok());
  CHECK(again->floor() == epoch{7});
  CHECK(again->snapshot() == t->snapshot());
  CHECK(t->replace_all({{{"bad..topic", 0}, broker_id{"b1"}}}, epoch{8}).err().code == errc::invalid_argument);
  CHECK(t->owner_of({"x", 0}) == broker_id{"b9"});
}

TEST_CASE("bad arguments are refused without touching the table", "[cluster][ownership]") {
  temp_dir dir;
  auto t = ownership_table::open(dir.path());
  REQUIRE(t.ok());
  CHECK(t->set_owner({"a..b", 0}, broker_id{"b2"}, epoch{1}).err().code == errc::invalid_argument);
  CHECK(t->set_owner({"orders", -1}, broker_id{"b2"}, epoch{1}).err().code == errc::invalid_argument);
  CHECK(t->set_owner(orders3, broker_id{""}, epoch{1}).err().code == errc::invalid_argument);
  CHECK(t->entries().empty());
  CHECK(moonmq::test::read_text(file_in(dir)).empty());  // nothing written
}

TEST_CASE("a corrupt or torn table file is refused with the file named", "[cluster][ownership]") {
  const char* bad[] = {
      "",                                                                      // empty
      "{\"version\":1,\"floor_epoch\":0,\"entries\":[{\"topic\":\"orders\",",  // torn
      "[1,2]",                                                                 // not an object
      "{\"version\":2,\"floor_epoch\":0,\"entries\":[]}",                      // unknown version
      "{\"version\":1,\"entries\":[]}",                                        // no floor
      "{\"version\":1,\"floor_epoch\":0,\"entries\":[{\"topic\":\"o\",\"partition\":-1,\"owner\":\"b1\",\"epoch\":1}]}",
      "{\"version\":1,\"floor_epoch\":0,\"entries\":[{\"topic\":\"o\",\"partition\":0,\"owner\":7,\"epoch\":1}]}",
      "{\"version\":1,\"floor_epoch\":0,\"entries\":[{\"topic\":\"o\",\"partition\":0,\"owner\":\"b1\"}]}",
      "{\"version\":1,\"floor_epoch\":0,\"entries\":[{\"topic\":\"o\",\"partition\":0,\"owner\":\"b1\",\"epoch\":1},"
      "{\"topic\":\"o\",\"partition\":0,\"owner\":\"b2\",\"epoch\":1}]}",  // repeated row
  };
  for (const char* text : bad) {
    temp_dir dir;
    write_text(file_in(dir), text);
    auto t = ownership_table::open(dir.path());
    INFO("file contents: " << text);
    REQUIRE_FALSE(t.ok());
    CHECK(t.err().code == errc::corrupt_state);
    CHECK_THAT(t.err().message, Catch::Contains(file_in(dir)));
    // The file is left as it was for the operator to inspect.
    CHECK(moonmq::test::read_text(file_in(dir)) == text);
  }
}

TEST_CASE("a left-over temp file from an interrupted write is ignored", "[cluster][ownership]") {
  temp_dir dir;
  {
    auto t = ownership_table::open(dir.path());
    REQUIRE(t.ok());
    REQUIRE(t->set_owner(orders3, broker_id{"b2"}, epoch{1}).ok());
  }
  write_text(file_in(dir) + ".tmp", "{\"version\":1,\"floor_ep");  // crash before the rename
  auto t = ownership_table::open(dir.path());
  REQUIRE(t.ok());
  CHECK(t->owner_of(orders3) == broker_id{"b2"});
  CHECK(moonmq::test::read_text(file_in(dir) + ".tmp").empty());
}
