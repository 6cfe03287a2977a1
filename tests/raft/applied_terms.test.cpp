// raft::applied_terms: the terms of recently applied entries, which settle a
// proposal whose entry a compaction took out of the log.

#include <catch2/catch.hpp>

#include <optional>

#include "raft/applied_terms.hpp"

using namespace moonmq::raft;

TEST_CASE("applied_terms keeps the last entries' terms and refusals, looks up by index, ignores indexes that do not grow",
          "[raft][applied_terms]") {
  applied_terms kept{3};
  auto term_of = [&](uint64_t i) -> std::optional<term> {
    auto e = kept.find(log_index{i});
    return e ? std::optional<term>{e->entry_term} : std::nullopt;
  };
  CHECK_FALSE(term_of(1));
  kept.remember(log_index{1}, term{1}, false);
  kept.remember(log_index{2}, term{1}, true);
  kept.remember(log_index{5}, term{2}, false);  // 3 and 4 came through an installed snapshot
  CHECK(term_of(1) == term{1});
  CHECK(term_of(5) == term{2});
  CHECK_FALSE(term_of(3));
  CHECK(kept.find(log_index{2})->refused);
  CHECK_FALSE(kept.find(log_index{5})->refused);
  kept.remember(log_index{5}, term{9}, true);  // not after the last: ignored
  kept.remember(log_index{4}, term{9}, true);
  CHECK(term_of(5) == term{2});
  CHECK_FALSE(kept.find(log_index{5})->refused);
  CHECK(kept.size() == 3);
  kept.remember(log_index{6}, term{3}, false);  // the oldest goes
  CHECK(kept.size() == 3);
  CHECK_FALSE(term_of(1));
  CHECK(term_of(2) == term{1});
  CHECK(term_of(6) == term{3});
}
