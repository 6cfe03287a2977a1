#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "groups/offset_store.hpp"
#include "tests/support/process.hpp"

using namespace moonmq::groups;
namespace fs = std::filesystem;

namespace {

offset_store open_ok(const std::string& dir) {
  auto r = offset_store::open(dir);
  if (!r.ok())
    FAIL("open failed: " << r.err().message);
  return std::move(r).value();
}

void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path{path}.parent_path());
  std::ofstream{path, std::ios::binary | std::ios::trunc} << text;
}

}  // namespace

TEST_CASE("offsets: commit then fetch returns the offsets sorted by topic and partition", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  auto store = open_ok(tmp.path());
  REQUIRE(store.commit("g1", {{"orders", 2, 40}, {"orders", 0, 10}, {"audit", 0, 3}}).ok());
  auto all = store.fetch("g1");
  REQUIRE(all.ok());
  CHECK(*all == std::vector<partition_offset>{{"audit", 0, 3}, {"orders", 0, 10}, {"orders", 2, 40}});
  auto orders = store.fetch("g1", std::string{"orders"});
  CHECK(*orders == std::vector<partition_offset>{{"orders", 0, 10}, {"orders", 2, 40}});
  CHECK(store.committed("g1", "orders", 2) == 40);
  CHECK_FALSE(store.committed("g1", "orders", 1).has_value());
}

TEST_CASE("offsets: a later commit replaces the offset, even a lower one", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  auto store = open_ok(tmp.path());
  REQUIRE(store.commit("g", {{"t", 0, 10}}).ok());
  REQUIRE(store.commit("g", {{"t", 0, 4}, {"t", 1, 1}}).ok());
  CHECK(store.committed("g", "t", 0) == 4);
  CHECK(store.committed("g", "t", 1) == 1);
}

TEST_CASE("offsets: an unknown group fetches an empty list and is not listed", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  auto store = open_ok(tmp.path());
  auto r = store.fetch("never");
  REQUIRE(r.ok());
  CHECK(r->empty());
  CHECK_FALSE(store.has_group("never"));
  CHECK(store.list_groups().empty());
}

TEST_CASE("offsets: commits survive reopening the store", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  {
    auto store = open_ok(tmp.path());
    REQUIRE(store.commit("g1", {{"orders", 0, 7}}).ok());
    REQUIRE(store.commit("g2", {{"orders", 0, 9}, {"orders", 1, 2}}).ok());
    REQUIRE(store.commit("g1", {{"orders", 0, 8}}).ok());
  }
  auto store = open_ok(tmp.path());
  CHECK(store.list_groups() == std::vector<std::string>{"g1", "g2"});
  CHECK(store.committed("g1", "orders", 0) == 8);
  CHECK(*store.fetch("g2") == std::vector<partition_offset>{{"orders", 0, 9}, {"orders", 1, 2}});
  CHECK(fs::exists(store.file_of("g1")));
  CHECK(store.file_of("g1") == tmp.path() + "/__groups/g1/offsets.json");
}

TEST_CASE("offsets: a commit with a stale generation is fenced and stores nothing", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  auto store = open_ok(tmp.path());
  REQUIRE(store.commit("g", {{"t", 0, 5}}, commit_fence{generation{3}, generation{3}}).ok());
  auto stale = store.commit("g", {{"t", 0, 6}}, commit_fence{generation{2}, generation{3}});
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.err().code == errc::illegal_generation);
  CHECK(store.committed("g", "t", 0) == 5);
  // No generation given: not fenced.
  REQUIRE(store.commit("g", {{"t", 0, 6}}, commit_fence{std::nullopt, generation{3}}).ok());
  CHECK(store.committed("g", "t", 0) == 6);
}

TEST_CASE("offsets: invalid input is refused and the batch is all-or-nothing", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  auto store = open_ok(tmp.path());
  CHECK(store.commit("bad/group", {{"t", 0, 1}}).err().code == errc::invalid_group_id);
  CHECK(store.commit("..", {{"t", 0, 1}}).err().code == errc::invalid_group_id);
  CHECK(store.fetch("a b").err().code == errc::invalid_group_id);
  CHECK(store.commit("g", {{"t", 0, 1}, {"t", -1, 1}}).err().code == errc::invalid_argument);
  CHECK(store.commit("g", {{"t", 0, -5}}).err().code == errc::invalid_argument);
  CHECK(store.commit("g", {{"", 0, 1}}).err().code == errc::invalid_argument);
  CHECK_FALSE(store.committed("g", "t", 0).has_value());
  CHECK_FALSE(fs::exists(tmp.path() + "/offsets.json"));
  CHECK(store.list_groups().empty());
}

TEST_CASE("offsets: set_if_higher only ever raises the committed offset", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  {
    auto store = open_ok(tmp.path());
    auto first = store.set_if_higher("g", "t", 3, 100);
    REQUIRE(first.ok());
    CHECK(*first);
    CHECK_FALSE(*store.set_if_higher("g", "t", 3, 50));
    CHECK_FALSE(*store.set_if_higher("g", "t", 3, 100));
    CHECK(*store.set_if_higher("g", "t", 3, 101));
    CHECK(store.set_if_higher("g", "t", 3, -1).err().code == errc::invalid_argument);
  }
  auto store = open_ok(tmp.path());
  CHECK(store.committed("g", "t", 3) == 101);
}

TEST_CASE("offsets: offsets_for_partition and remove_partition work across groups", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  {
    auto store = open_ok(tmp.path());
    REQUIRE(store.commit("a", {{"t", 0, 1}, {"t", 1, 11}}).ok());
    REQUIRE(store.commit("b", {{"t", 1, 22}}).ok());
    REQUIRE(store.commit("c", {{"u", 1, 33}}).ok());
    CHECK(store.offsets_for_partition("t", 1) == std::vector<group_offset>{{"a", 11, ""}, {"b", 22, ""}});
    auto removed = store.remove_partition("t", 1);
    REQUIRE(removed.ok());
    CHECK(*removed == 2);
    CHECK(store.offsets_for_partition("t", 1).empty());
  }
  auto store = open_ok(tmp.path());
  CHECK_FALSE(store.committed("a", "t", 1).has_value());
  CHECK(store.committed("a", "t", 0) == 1);
  CHECK(store.committed("c", "u", 1) == 33);
}

TEST_CASE("offsets: a commit's metadata is kept with its offset, moves with it and survives reopening", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  std::string file;
  {
    auto store = open_ok(tmp.path());
    REQUIRE(store.commit("g", {{"t", 0, 5, "checkpoint-a"}, {"t", 1, 6}}).ok());
    CHECK(*store.fetch("g") == std::vector<partition_offset>{{"t", 0, 5, "checkpoint-a"}, {"t", 1, 6, ""}});
    // A longer metadata than Kafka's offset.metadata.max.bytes is refused
    // and the whole commit stores nothing.
    auto big = store.commit("g", {{"t", 1, 7, "b"}, {"t", 0, 8, std::string(max_offset_metadata_bytes + 1, 'x')}});
    CHECK(big.err().code == errc::invalid_argument);
    CHECK(store.committed("g", "t", 1) == 6);
    REQUIRE(store.commit("g", {{"t", 2, 1, std::string(max_offset_metadata_bytes, 'y')}}).ok());
    // What a move's source pushes: offset and metadata; a higher offset
    // brings its metadata along.
    CHECK(store.offsets_for_partition("t", 0) == std::vector<group_offset>{{"g", 5, "checkpoint-a"}});
    CHECK(*store.set_if_higher("g", "t", 0, 9, "moved"));
    CHECK_FALSE(*store.set_if_higher("g", "t", 0, 8, "older"));
    file = store.file_of("g");
  }
  auto store = open_ok(tmp.path());
  CHECK(*store.fetch("g", std::string{"t"})
        == std::vector<partition_offset>{
             {"t", 0, 9, "moved"}, {"t", 1, 6, ""}, {"t", 2, 1, std::string(max_offset_metadata_bytes, 'y')}});
  // A file written before metadata was kept reads as "".
  write_text(file, R"({"version":1,"group":"g","offsets":[{"topic":"t","partition":0,"offset":5}]})");
  auto old = open_ok(tmp.path());
  CHECK(*old.fetch("g") == std::vector<partition_offset>{{"t", 0, 5, ""}});
}

TEST_CASE("offsets: remove_group deletes a group's offsets durably and only that group's", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  {
    auto store = open_ok(tmp.path());
    REQUIRE(store.commit("a", {{"t", 0, 1}}).ok());
    REQUIRE(store.commit("b", {{"t", 0, 2}}).ok());
    CHECK(*store.remove_group("a"));
    CHECK_FALSE(*store.remove_group("a"));
    CHECK_FALSE(*store.remove_group("never"));
    CHECK(store.remove_group("..").err().code == errc::invalid_group_id);
    CHECK(store.fetch("a")->empty());
    CHECK_FALSE(store.has_group("a"));
    CHECK(store.committed("b", "t", 0) == 2);
  }
  auto store = open_ok(tmp.path());
  CHECK_FALSE(store.has_group("a"));
  CHECK_FALSE(fs::exists(fs::path{tmp.path()} / "__groups" / "a"));
  CHECK(store.committed("b", "t", 0) == 2);
  CHECK(store.list_groups() == std::vector<std::string>{"b"});
}

TEST_CASE("offsets: remove_offsets deletes some partitions' offsets of one group durably", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  {
    auto store = open_ok(tmp.path());
    REQUIRE(store.commit("a", {{"t", 0, 1}, {"t", 1, 2}, {"t", 2, 3}, {"u", 0, 4}}).ok());
    REQUIRE(store.commit("b", {{"t", 0, 5}}).ok());
    CHECK(*store.remove_offsets("a", "t", {0, 2, 7}) == 2);
    CHECK(*store.remove_offsets("a", "t", {0}) == 0);
    CHECK(*store.remove_offsets("never", "t", {0}) == 0);
    CHECK(store.remove_offsets("..", "t", {0}).err().code == errc::invalid_group_id);
  }
  auto store = open_ok(tmp.path());
  CHECK(*store.fetch("a") == std::vector<partition_offset>{{"t", 1, 2, ""}, {"u", 0, 4, ""}});
  CHECK(store.committed("b", "t", 0) == 5);
  // The last offsets of a group take the group with them.
  CHECK(*store.remove_offsets("b", "t", {0}) == 1);
  CHECK_FALSE(store.has_group("b"));
  CHECK(store.list_groups() == std::vector<std::string>{"a"});
  CHECK_FALSE(open_ok(tmp.path()).has_group("b"));
}

TEST_CASE("offsets: a corrupt group file refuses the open and names the file", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  std::string file;
  {
    auto store = open_ok(tmp.path());
    REQUIRE(store.commit("g", {{"t", 0, 5}}).ok());
    file = store.file_of("g");
  }
  SECTION("truncated JSON") { write_text(file, R"({"version":1,"group":"g","offsets":[{"topic":"t","par)"); }
  SECTION("empty file") { write_text(file, ""); }
  SECTION("wrong field type") {
    write_text(file, R"({"version":1,"group":"g","offsets":[{"topic":"t","partition":0,"offset":"5"}]})");
  }
  SECTION("negative offset") {
    write_text(file, R"({"version":1,"group":"g","offsets":[{"topic":"t","partition":0,"offset":-5}]})");
  }
  SECTION("file of another group") {
    write_text(file, R"({"version":1,"group":"h","offsets":[]})");
  }
  SECTION("unknown version") { write_text(file, R"({"version":2,"group":"g","offsets":[]})"); }
  SECTION("metadata that is not a string") {
    write_text(file, R"({"version":1,"group":"g","offsets":[{"topic":"t","partition":0,"offset":5,"metadata":7}]})");
  }
  auto r = offset_store::open(tmp.path());
  REQUIRE_FALSE(r.ok());
  CHECK(r.err().code == errc::corrupt_state);
  CHECK(r.err().message.find(file) != std::string::npos);
}

TEST_CASE("offsets: a torn temp file from an interrupted write is ignored", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  std::string file;
  {
    auto store = open_ok(tmp.path());
    REQUIRE(store.commit("g", {{"t", 0, 5}}).ok());
    file = store.file_of("g");
  }
  // A crash during the next write leaves half a temp file; the rename never happened.
  write_text(file + ".tmp", R"({"version":1,"group":"g","offsets":[{"topic":"t","partition":0,"off)");
  // A crash during a new group's first write leaves its directory with only a temp file.
  write_text(tmp.path() + "/__groups/fresh/offsets.json.tmp", "{\"vers");
  auto store = open_ok(tmp.path());
  CHECK(store.committed("g", "t", 0) == 5);
  CHECK(store.list_groups() == std::vector<std::string>{"g"});
  CHECK_FALSE(fs::exists(file + ".tmp"));
  REQUIRE(store.commit("fresh", {{"t", 0, 1}}).ok());
  CHECK(store.committed("fresh", "t", 0) == 1);
}

TEST_CASE("offsets: stray entries under __groups are skipped", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  write_text(tmp.path() + "/__groups/README", "not a group");
  write_text(tmp.path() + "/__groups/bad name/offsets.json", "garbage");
  auto store = open_ok(tmp.path());
  CHECK(store.list_groups().empty());
}

TEST_CASE("offsets: the longest valid group id fits on disk", "[groups]") {
  moonmq::test::temp_dir tmp{"groups-offsets"};
  std::string id(249, 'g');
  {
    auto store = open_ok(tmp.path());
    REQUIRE(store.commit(id, {{"t", 0, 1}}).ok());
  }
  auto store = open_ok(tmp.path());
  CHECK(store.committed(id, "t", 0) == 1);
}
