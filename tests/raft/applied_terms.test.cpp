// raft::applied_terms: the terms of recently applied entries, which settle a
// proposal whose entry a compaction took out of the log.

#include <catch2/catch.hpp>

#include "raft/applied_terms.hpp"

using namespace moonmq::raft;

TEST_CASE("applied_terms keeps the last entries' terms, looks up by index and ignores indexes that do not grow",
          "[raft][applied_terms]") {
  applied_terms kept{3};
  CHECK_FALSE(kept.term_of(log_index{1}));
  kept.remember(log_index{1}, term{1});
  kept.remember(log_index{2}, term{1});
  kept.remember(log_index{5}, term{2});  // 3 and 4 came through an installed snapshot
  CHECK(kept.term_of(log_index{1}) == term{1});
  CHECK(kept.term_of(log_index{5}) == term{2});
  CHECK_FALSE(kept.term_of(log_index{3}));
  kept.remember(log_index{5}, term{9});  // not after the last: ignored
  kept.remember(log_index{4}, term{9});
  CHECK(kept.term_of(log_index{5}) == term{2});
  CHECK(kept.size() == 3);
  kept.remember(log_index{6}, term{3});  // the oldest goes
  CHECK(kept.size() == 3);
  CHECK_FALSE(kept.term_of(log_index{1}));
  CHECK(kept.term_of(log_index{2}) == term{1});
  CHECK(kept.term_of(log_index{6}) == term{3});
}
