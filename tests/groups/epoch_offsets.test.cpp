// Committed offsets on shared storage, one store per owner epoch
// (groups/epoch_offsets.hpp, docs/shared-storage.md "Committed group
// offsets"): a new epoch starts from the newest earlier one, never writes
// into it, and a deletion in a later epoch is never undone by an earlier one.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "groups/epoch_offsets.hpp"
#include "tests/support/process.hpp"

using namespace moonmq::groups;
namespace fs = std::filesystem;

namespace {

offset_store open_at(const std::string& root, int64_t epoch) {
  auto r = open_epoch_offsets(root, epoch);
  if (!r.ok())
    FAIL("open at epoch " << epoch << " failed: " << r.err().message);
  return std::move(r).value();
}

/// Every file under `dir` with its size and modification time.
std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> snapshot(const std::string& dir) {
  std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      out[e.path().string()] = {e.file_size(), e.last_write_time()};
  return out;
}

}  // namespace

TEST_CASE("epoch offsets: a new epoch starts from the newest earlier one and leaves it untouched", "[groups][shared]") {
  moonmq::test::temp_dir tmp{"epoch-offsets"};
  const auto root = tmp.path() + "/t-0~7";
  {
    auto e1 = open_at(root, 1);
    REQUIRE(e1.commit("g1", {{"t", 0, 10, "m1"}}).ok());
    REQUIRE(e1.commit("g2", {{"t", 0, 3}}).ok());
  }
  {
    auto e2 = open_at(root, 2);
    REQUIRE(e2.commit("g1", {{"t", 0, 25}}).ok());
  }
  const auto before = snapshot(epoch_offsets_dir(root, 2));
  // Epoch 4's owner took over from 2 (epoch 3's owner never opened offsets).
  auto e4 = open_at(root, 4);
  CHECK(e4.committed("g1", "t", 0) == 25);
  CHECK(e4.committed("g2", "t", 0) == 3);
  CHECK(snapshot(epoch_offsets_dir(root, 2)) == before);
  CHECK_FALSE(fs::exists(epoch_offsets_dir(root, 3)));
  // A commit in epoch 4 is in epoch 4's directory only.
  REQUIRE(e4.commit("g1", {{"t", 0, 40}}).ok());
  CHECK(open_at(root, 2).committed("g1", "t", 0) == 25);
  CHECK(open_at(root, 4).committed("g1", "t", 0) == 40);
  // Metadata is carried with the offset.
  auto e1_meta = open_at(root, 1).fetch("g1");
  REQUIRE(e1_meta.ok());
  CHECK(e1_meta->at(0).metadata == "m1");
}

TEST_CASE("epoch offsets: a group deleted in a later epoch stays deleted after the next takeover", "[groups][shared]") {
  moonmq::test::temp_dir tmp{"epoch-offsets"};
  const auto root = tmp.path() + "/t-0~7";
  REQUIRE(open_at(root, 1).commit("gone", {{"t", 0, 5}}).ok());
  {
    auto e2 = open_at(root, 2);
    REQUIRE(e2.committed("gone", "t", 0) == 5);
    auto removed = e2.remove_group("gone");
    REQUIRE(removed.ok());
    CHECK(*removed);
  }
  auto e3 = open_at(root, 3);
  CHECK_FALSE(e3.committed("gone", "t", 0).has_value());
  CHECK(e3.list_groups().empty());
}

TEST_CASE("epoch offsets: an interrupted carry is discarded and redone, and a stopped owner's unfinished write is "
          "ignored",
          "[groups][shared]") {
  moonmq::test::temp_dir tmp{"epoch-offsets"};
  const auto root = tmp.path() + "/t-0~7";
  REQUIRE(open_at(root, 1).commit("g", {{"t", 0, 9}}).ok());
  // Epoch 1's owner, stopped mid-write: its temporary file never reached
  // its rename and must stay where it is (it is not the new owner's).
  const auto torn = epoch_offsets_dir(root, 1) + "/__groups/g/offsets.json.tmp";
  std::ofstream{torn} << "{\"version\":1,\"group\":\"g\",\"offs";
  // A carry into epoch 2 that crashed before its rename left half a copy.
  fs::create_directories(epoch_offsets_dir(root, 2) + ".tmp/__groups/g");
  std::ofstream{epoch_offsets_dir(root, 2) + ".tmp/__groups/g/offsets.json"} << "{\"vers";
  auto e2 = open_at(root, 2);
  CHECK(e2.committed("g", "t", 0) == 9);
  CHECK(fs::exists(torn));
  CHECK_FALSE(fs::exists(epoch_offsets_dir(root, 2) + ".tmp"));
}

TEST_CASE("epoch offsets: a corrupt earlier epoch refuses the takeover and writes nothing", "[groups][shared]") {
  moonmq::test::temp_dir tmp{"epoch-offsets"};
  const auto root = tmp.path() + "/t-0~7";
  REQUIRE(open_at(root, 1).commit("g", {{"t", 0, 9}}).ok());
  std::ofstream{epoch_offsets_dir(root, 1) + "/__groups/g/offsets.json", std::ios::trunc} << "{\"version\":1,";
  auto e2 = open_epoch_offsets(root, 2);
  REQUIRE_FALSE(e2.ok());
  CHECK(e2.err().code == errc::corrupt_state);
  CHECK_THAT(e2.err().message, Catch::Contains(epoch_offsets_dir(root, 1)));
  CHECK_FALSE(fs::exists(epoch_offsets_dir(root, 2)));
}

TEST_CASE("epoch offsets: a former owner reads the newest epoch read-only", "[groups][shared]") {
  moonmq::test::temp_dir tmp{"epoch-offsets"};
  const auto root = tmp.path() + "/t-0~7";
  auto none = read_newest_offsets(root);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  REQUIRE(open_at(root, 1).commit("g", {{"t", 0, 9}}).ok());
  REQUIRE(open_at(root, 3).commit("g", {{"t", 0, 12}}).ok());
  auto newest = read_newest_offsets(root);
  REQUIRE(newest.ok());
  REQUIRE(newest->has_value());
  CHECK((*newest)->committed("g", "t", 0) == 12);
  auto refused = (*newest)->commit("g", {{"t", 0, 13}});
  CHECK_FALSE(refused.ok());
  CHECK(open_at(root, 3).committed("g", "t", 0) == 12);
  CHECK_FALSE(open_epoch_offsets(root, 0).ok());
}
