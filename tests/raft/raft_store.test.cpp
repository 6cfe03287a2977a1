// raft_store: durable round trip and the recovery rule for damaged files.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core_fixture.hpp"
#include "raft/raft_store.hpp"
#include "util/atomic_file.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
  fs::path path;
  explicit temp_dir(const char* tag) {
    path = fs::temp_directory_path() / ("moonmq-raft-store-" + std::string(tag) + "-" + std::to_string(::getpid()));
    fs::remove_all(path);
  }
  ~temp_dir() { fs::remove_all(path); }
  std::string file(const char* name) const { return (path / name).string(); }
};

void write(const std::string& file, const std::string& data) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << data;
}

std::string read(const std::string& file) {
  std::string s;
  (void)moonmq::util::read_file(file, s);
  return s;
}

/// A store holding entries 1..n of term 1 and hard state {term 1, vote b2, commit 2}.
void populate(const std::string& dir, int n) {
  auto st = raft_store::open(dir);
  REQUIRE(st.ok());
  ready_batch rd;
  rd.hard = hard_state{term{1}, id("b2"), log_index{2}};
  rd.truncate_from = log_index{1};
  for (int i = 1; i <= n; ++i)
    rd.entries.push_back(owner_at(1, static_cast<uint64_t>(i), "orders", i));
  REQUIRE(st->save(rd).ok());
}

}  // namespace

TEST_CASE("raft_store round trip: hard state, appends, truncation and snapshot survive a reopen",
          "[raft][store]") {
  temp_dir d("roundtrip");
  persisted_state expect;
  {
    auto st = raft_store::open(d.path.string());
    REQUIRE(st.ok());
    CHECK(st->state().entries.empty());
    CHECK(fs::exists(d.file(raft_store::state_file)));  // a fresh store records term 0 at once

    std::vector<ready_batch> batches(4);
    batches[0].hard = hard_state{term{2}, id("b1"), log_index{0}};
    batches[0].truncate_from = log_index{1};
    batches[0].entries = {log_entry{term{2}, log_index{1}, controller_entry{id("b1")}}, owner_at(2, 2), owner_at(2, 3)};
    batches[1].truncate_from = log_index{4};  // plain append
    batches[1].entries = {owner_at(2, 4), owner_at(2, 5)};
    batches[1].hard = hard_state{term{2}, id("b1"), log_index{3}};
    batches[2].truncate_from = log_index{5};  // conflicting suffix replaced
    batches[2].entries = {owner_at(3, 5, "audit", 1, "b3"), owner_at(3, 6)};
    batches[2].hard = hard_state{term{3}, node_id{}, log_index{4}};
    snapshot s;
    s.last_index = log_index{4};
    s.last_term = term{2};
    s.controller = id("b1");
    s.owners[{"orders", 0}] = id("b2");
    batches[3].snap = s;  // compaction: entries 5..6 stay
    for (auto& rd : batches) {
      REQUIRE(st->save(rd).ok());
      REQUIRE(apply_ready(expect, rd).ok());
    }
    CHECK(st->state().entries == expect.entries);
  }
  auto st = raft_store::open(d.path.string());
  REQUIRE(st.ok());
  CHECK(st->state().hard == expect.hard);
  REQUIRE(st->state().snap);
  CHECK(*st->state().snap == *expect.snap);
  REQUIRE(st->state().entries.size() == 2);
  CHECK(st->state().entries == expect.entries);
  CHECK(std::get<owner_entry>(st->state().entries[0].payload).topic == "audit");
}

TEST_CASE("raft_store refuses a truncated state file and names it", "[raft][store]") {
  temp_dir d("state");
  populate(d.path.string(), 3);
  std::string text = read(d.file(raft_store::state_file));
  write(d.file(raft_store::state_file), text.substr(0, text.size() / 2));
  auto st = raft_store::open(d.path.string());
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::corrupt_state);
  CHECK_THAT(st.err().message, Catch::Contains("raft-state.json"));
}

TEST_CASE("raft_store refuses a state file of the wrong shape and names it", "[raft][store]") {
  temp_dir d("shape");
  populate(d.path.string(), 3);
  write(d.file(raft_store::state_file), R"({"term":-1,"vote":"b1","commit":0})");
  auto st = raft_store::open(d.path.string());
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::corrupt_state);
  CHECK_THAT(st.err().message, Catch::Contains("raft-state.json") && Catch::Contains("term"));
}

TEST_CASE("raft_store refuses a missing state file when a log exists", "[raft][store]") {
  temp_dir d("missing");
  populate(d.path.string(), 3);
  fs::remove(d.file(raft_store::state_file));
  auto st = raft_store::open(d.path.string());
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::corrupt_state);
  CHECK_THAT(st.err().message, Catch::Contains("raft-state.json"));
}

TEST_CASE("raft_store refuses a malformed snapshot file and names it", "[raft][store]") {
  temp_dir d("snap");
  populate(d.path.string(), 3);
  write(d.file(raft_store::snapshot_file), R"({"last_index":2,"last_term":1,"controller":"b1","owners":[{"topic":"x"}]})");
  auto st = raft_store::open(d.path.string());
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::corrupt_state);
  CHECK_THAT(st.err().message, Catch::Contains("raft-snapshot.json"));
}

TEST_CASE("raft_store drops a torn final log record that was never acknowledged", "[raft][store]") {
  temp_dir d("torn");
  populate(d.path.string(), 3);
  std::string log = read(d.file(raft_store::log_file));
  std::string fourth = encode_log_record(owner_at(1, 4));
  SECTION("record cut short (no newline)") { write(d.file(raft_store::log_file), log + fourth.substr(0, 20)); }
  SECTION("complete line with a bad CRC") {
    fourth[0] = fourth[0] == '0' ? '1' : '0';
    write(d.file(raft_store::log_file), log + fourth);
  }
  auto st = raft_store::open(d.path.string());
  REQUIRE(st.ok());
  CHECK(st->state().entries.size() == 3);
  CHECK(read(d.file(raft_store::log_file)) == log);  // the torn tail is gone from disk too
}

TEST_CASE("raft_store refuses a damaged log record that is not the last one", "[raft][store]") {
  temp_dir d("midlog");
  populate(d.path.string(), 4);
  std::string log = read(d.file(raft_store::log_file));
  std::size_t second = log.find('\n') + 1;
  log[second + 20] = log[second + 20] == 'x' ? 'y' : 'x';  // flips a byte inside record 2's JSON
  write(d.file(raft_store::log_file), log);
  auto st = raft_store::open(d.path.string());
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::corrupt_state);
  CHECK_THAT(st.err().message, Catch::Contains("raft-log") && Catch::Contains("byte " + std::to_string(second)));
}

TEST_CASE("raft_store refuses a commit index beyond its log", "[raft][store]") {
  temp_dir d("commit");
  populate(d.path.string(), 3);
  write(d.file(raft_store::state_file), R"({"term":1,"vote":"b2","commit":9})");
  auto st = raft_store::open(d.path.string());
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::corrupt_state);
  CHECK_THAT(st.err().message, Catch::Contains("raft-state.json") && Catch::Contains("commit"));
}

TEST_CASE("raft_store recovers from a crash between writing a snapshot and rewriting the log", "[raft][store]") {
  temp_dir d("snapcrash");
  populate(d.path.string(), 5);
  snapshot s;
  s.last_index = log_index{3};
  s.last_term = term{1};
  s.controller = id("b1");
  // Only the snapshot file made it: the log still holds 1..5.
  REQUIRE_FALSE(moonmq::util::write_file_atomic(d.file(raft_store::snapshot_file), to_json(s).dump()));
  auto st = raft_store::open(d.path.string());
  REQUIRE(st.ok());
  REQUIRE(st->state().entries.size() == 2);
  CHECK(st->state().entries[0].index == log_index{4});
  CHECK(st->state().hard.commit == log_index{3});  // raised to the snapshot
}
