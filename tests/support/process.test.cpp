#include "tests/support/process.hpp"

#include <catch2/catch.hpp>

using namespace moonmq::test;

namespace {

const std::string log_text =
  "2026-12-06T22:49:35.700 info [node] node.ready admin_port=9644\n"
  "2026-12-06T22:49:35.753 error [node] node.data_dir_failed reason=\"not a directory\"\n"
  "2026-12-06T22:49:35.754 warning [raft] raft.store_slow took_ms=40\n"
  "2026-12-06T22:49:35.755 critical [raft] raft.store_failed error=\"disk full\"\n"
  "kcat: error [broker] says this is not a moonmq line\n"
  "  2026-12-06T22:49:35.756 error [node] indented: not a log line\n";

}  // namespace

TEST_CASE("the log check picks error and critical lines of moonmq's log format only", "[support]") {
  auto lines = unexpected_log_errors(log_text);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("node.data_dir_failed") != std::string::npos);
  CHECK(lines[1].find("raft.store_failed") != std::string::npos);
  CHECK(unexpected_log_errors("").empty());
}

TEST_CASE("an expected error is expected only while its declaration lives", "[support]") {
  {
    expected_log_errors expected{{"node.data_dir_failed"}};
    auto lines = unexpected_log_errors(log_text);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("raft.store_failed") != std::string::npos);
    {
      expected_log_errors both{{"raft.store_failed", "node.data_dir_failed"}};
      CHECK(unexpected_log_errors(log_text).empty());
    }
    // The inner declaration's copy of "node.data_dir_failed" is gone; the
    // outer one still holds.
    CHECK(unexpected_log_errors(log_text).size() == 1);
  }
  CHECK(unexpected_log_errors(log_text).size() == 2);
}
