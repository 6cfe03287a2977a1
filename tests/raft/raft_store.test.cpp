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

namespace {

/// A commit-only advance of the store populated by populate(): term 1, vote b2.
void advance_commit(raft_store& st, uint64_t commit) {
  ready_batch rd;
  rd.hard = hard_state{term{1}, id("b2"), log_index{commit}};
  REQUIRE(st.save(rd).ok());
}

/// One raft-commit slot, encoded here independently of the store (the
/// layout documented in raft_store.hpp).
std::string slot_bytes(uint64_t seq, uint64_t commit) {
  std::string s(32, '\0');
  s.replace(0, 4, "MQCI");
  for (int i = 0; i < 8; ++i) {
    s[8 + i] = static_cast<char>((seq >> (8 * i)) & 0xff);
    s[16 + i] = static_cast<char>((commit >> (8 * i)) & 0xff);
  }
  uint32_t crc = crc32(s.substr(8));
  for (int i = 0; i < 4; ++i)
    s[4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  return s;
}

}  // namespace

TEST_CASE("raft_store writes a commit-only advance to raft-commit in place and reads it back", "[raft][store]") {
  temp_dir d("commitslot");
  populate(d.path.string(), 5);
  const std::string state_before = read(d.file(raft_store::state_file));
  {
    auto st = raft_store::open(d.path.string());
    REQUIRE(st.ok());
    for (uint64_t c = 3; c <= 5; ++c)
      advance_commit(*st, c);
    CHECK(st->state().hard.commit == log_index{5});
  }
  CHECK(read(d.file(raft_store::state_file)) == state_before);  // term and vote unchanged: not rewritten
  CHECK(fs::file_size(d.file(raft_store::commit_file)) == 4096 + 32);  // two slots, written in turn
  auto st = raft_store::open(d.path.string());
  REQUIRE(st.ok());
  CHECK(st->state().hard.commit == log_index{5});

  // A term change rewrites raft-state.json with the commit; the larger value wins.
  ready_batch rd;
  rd.hard = hard_state{term{2}, node_id{}, log_index{5}};
  REQUIRE(st->save(rd).ok());
  auto again = raft_store::open(d.path.string());
  REQUIRE(again.ok());
  CHECK(again->state().hard == (hard_state{term{2}, node_id{}, log_index{5}}));
}

TEST_CASE("raft_store reads a torn raft-commit slot as the commit saved before it", "[raft][store]") {
  temp_dir d("tornslot");
  populate(d.path.string(), 5);  // raft-state.json: commit 2
  {
    auto st = raft_store::open(d.path.string());
    REQUIRE(st.ok());
    advance_commit(*st, 3);  // sequence 1: the slot at byte 4096
    advance_commit(*st, 4);  // sequence 2: the slot at byte 0
  }
  std::string data = read(d.file(raft_store::commit_file));
  REQUIRE(data.size() == 4096 + 32);
  CHECK(data.substr(0, 32) == slot_bytes(2, 4));
  CHECK(data.substr(4096) == slot_bytes(1, 3));

  std::string torn = data;
  torn[20] = static_cast<char>(torn[20] ^ 0x5a);  // the newer slot's commit: its save() never returned
  write(d.file(raft_store::commit_file), torn);
  {
    auto st = raft_store::open(d.path.string());
    REQUIRE(st.ok());
    CHECK(st->state().hard.commit == log_index{3});
    advance_commit(*st, 5);  // the next write goes over the torn slot (sequence 2 again)
  }
  CHECK(read(d.file(raft_store::commit_file)).substr(0, 32) == slot_bytes(2, 5));

  write(d.file(raft_store::commit_file), std::string(4096 + 32, '\x07'));  // no valid slot at all
  auto st = raft_store::open(d.path.string());
  REQUIRE(st.ok());
  CHECK(st->state().hard.commit == log_index{2});  // raft-state.json's
}

TEST_CASE("raft_store refuses a raft-commit index beyond its log and names the file", "[raft][store]") {
  temp_dir d("commitbeyond");
  populate(d.path.string(), 3);
  write(d.file(raft_store::commit_file), slot_bytes(7, 9));
  auto st = raft_store::open(d.path.string());
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::corrupt_state);
  CHECK_THAT(st.err().message, Catch::Contains("raft-commit") && Catch::Contains("commit"));
}

TEST_CASE("raft_store refuses a raft-commit left without raft-state.json", "[raft][store]") {
  temp_dir d("commitalone");
  fs::create_directories(d.path);
  write(d.file(raft_store::commit_file), slot_bytes(1000, 900));  // the other files deleted by hand
  auto st = raft_store::open(d.path.string());
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::corrupt_state);
  CHECK_THAT(st.err().message, Catch::Contains("raft-state.json") && Catch::Contains("raft-commit"));
}
