// The move protocol's bodies (cluster/move_messages.hpp): what the source
// writes reads back the same on the destination, and a body that does not
// fit is refused with the shape it should have, never half taken.

#include <catch2/catch.hpp>

#include "cluster/move_messages.hpp"

using namespace moonmq::cluster;
using nlohmann::json;

TEST_CASE("move messages: an ensure reads back as written, and a bad one names the shape", "[cluster][move]") {
  move_ensure e;
  e.from = "b1";
  e.partitions = 3;
  e.log_start_offset = 42;
  e.config = {{"segment.bytes", 1048576}, {"retention.bytes", -1}, {"retention.ms", 604800000}};
  e.owners = {{0, "b1"}, {1, "b2"}, {2, "b1"}};
  auto back = move_ensure_from_json(json::parse(to_json(e).dump()), 2);
  REQUIRE(back);
  CHECK(back->from == "b1");
  CHECK(back->partitions == 3);
  CHECK(back->log_start_offset == 42);
  CHECK(back->config == e.config);
  CHECK(back->owners == e.owners);

  // Without config or owners: the destination keeps its own.
  auto bare = move_ensure_from_json(json{{"from", "b1"}, {"partitions", 1}, {"log_start_offset", 0}}, 0);
  REQUIRE(bare);
  CHECK(bare->config.is_null());
  CHECK(bare->owners.empty());

  // A malformed owner row is skipped; the rest of the ensure stands.
  auto j = to_json(e);
  j["owners"].push_back({{"partition", -1}, {"owner", "b9"}});
  j["owners"].push_back({{"partition", 1}});
  auto skipped = move_ensure_from_json(j, 0);
  REQUIRE(skipped);
  CHECK(skipped->owners == e.owners);

  // The move id and attempt travel together, or not at all.
  e.move_id = "b1-17";
  e.attempt = 1733616000000;
  auto fenced = move_ensure_from_json(to_json(e), 2);
  REQUIRE(fenced);
  CHECK(fenced->move_id == "b1-17");
  CHECK(fenced->attempt == 1733616000000);
  CHECK(bare->move_id.empty());
  CHECK(bare->attempt == 0);
  auto with = [&](const char* key, json value, const char* drop = nullptr) {
    auto j = to_json(e);
    j[key] = std::move(value);
    if (drop)
      j.erase(drop);
    return j;
  };
  for (const auto& bad : {with("attempt", 0), with("attempt", "5"), with("move_id", "a/b"), with("move_id", 3),
                          with("move_id", "b1-17", "attempt"), with("attempt", 5, "move_id")}) {
    INFO(bad.dump());
    CHECK_FALSE(move_ensure_from_json(bad, 2));
  }

  for (const auto& bad : {json{{"partitions", 3}, {"log_start_offset", 0}},                    // no from
                          json{{"from", "b1"}, {"partitions", "3"}, {"log_start_offset", 0}},  // not a number
                          json{{"from", "b1"}, {"partitions", 3}, {"log_start_offset", -1}},   // negative start
                          json{{"from", "b1"}, {"partitions", 2}, {"log_start_offset", 0}},    // partition 2 of 2
                          json{{"from", "b1"}, {"partitions", 100001}, {"log_start_offset", 0}}, json::array()}) {
    auto r = move_ensure_from_json(bad, 2);
    INFO(bad.dump());
    REQUIRE_FALSE(r);
    CHECK(r.err().code == errc::invalid_request);
    CHECK(r.err().message.find("\"log_start_offset\"") != std::string::npos);
  }
}

TEST_CASE("move messages: a confirm carries its optional fields only when known", "[cluster][move]") {
  auto full = to_json(move_confirm{"b1", 100, 7, 12});
  CHECK(full == json{{"from", "b1"}, {"log_end_offset", 100}, {"log_start_offset", 7}, {"owner_epoch", 12}});
  auto back = move_confirm_from_json(full);
  REQUIRE(back);
  CHECK(back->log_start_offset == 7);
  CHECK(back->owner_epoch == 12);

  // A confirm sent in the source's place without its log start, from a
  // source that predates owner epochs: both read as absent.
  auto lean = to_json(move_confirm{"b1", 100, -1, 0});
  CHECK(lean == json{{"from", "b1"}, {"log_end_offset", 100}});
  auto read = move_confirm_from_json(json{{"log_end_offset", 5}});
  REQUIRE(read);
  CHECK(read->from.empty());
  CHECK(read->log_start_offset == -1);
  CHECK(read->owner_epoch == 0);

  CHECK_FALSE(move_confirm_from_json(json{{"from", "b1"}}));
  CHECK_FALSE(move_confirm_from_json(json{{"log_end_offset", 1.5}}));
}

TEST_CASE("move messages: offsets and cleanup read back, and refuse what does not fit", "[cluster][move]") {
  json offsets = json::array({{{"group", "g"}, {"offset", 9}}});
  auto back = move_offsets_from_json(to_json(move_offsets{"orders", 4, offsets}));
  REQUIRE(back);
  CHECK(back->topic == "orders");
  CHECK(back->partition == 4);
  CHECK(back->offsets == offsets);
  CHECK_FALSE(move_offsets_from_json(json{{"topic", "orders"}, {"partition", 4}, {"offsets", json::object()}}));
  CHECK_FALSE(move_offsets_from_json(json{{"topic", "orders"}, {"partition", 4294967296LL}, {"offsets", offsets}}));

  auto cleanup = move_cleanup_from_json(to_json(move_cleanup{"b2"}));
  REQUIRE(cleanup);
  CHECK(cleanup->owner == "b2");
  CHECK_FALSE(move_cleanup_from_json(json{{"owner", 2}}));
}

TEST_CASE("move messages: a destination's answer carries its optional fields only when set, and reads back",
          "[cluster][move]") {
  move_answer appended;
  appended.log_end_offset = 7;
  CHECK(to_json(appended) == json{{"log_end_offset", 7}});
  move_answer ensured;
  ensured.log_start_offset = 0;
  ensured.log_end_offset = 0;
  ensured.copy_none = true;
  CHECK(to_json(ensured) == json{{"log_start_offset", 0}, {"log_end_offset", 0}, {"copy", "none"}});
  move_answer confirmed;
  confirmed.owner = "b2";
  confirmed.log_end_offset = 9;
  confirmed.already_confirmed = true;
  auto back = move_answer_from_json(json::parse(to_json(confirmed).dump()));
  REQUIRE(back);
  CHECK(back->owner == "b2");
  CHECK(back->log_end_offset == 9);
  CHECK(back->already_confirmed);
  CHECK(back->log_start_offset == -1);
  CHECK_FALSE(back->copy_none);
  // Without its end an answer is not one: the source cannot resume from it.
  auto bad = move_answer_from_json(json{{"owner", "b2"}});
  REQUIRE_FALSE(bad);
  CHECK(bad.err().message.find("log_end_offset") != std::string::npos);
}

TEST_CASE("move messages: a move request reads back as written, its token checked", "[cluster][move]") {
  move_request m{topic_partition{"orders", 3}, "b2", "balancer", "rack spread", "b1-1733616000000-9f3a0c2e71d4b865"};
  auto back = move_request_from_json(json::parse(to_json(m).dump()));
  REQUIRE(back);
  CHECK(back->tp == m.tp);
  CHECK(back->to == "b2");
  CHECK(back->origin == "balancer");
  CHECK(back->reason == "rack spread");
  CHECK(back->submission == m.submission);

  // Only the three required fields: an operator's move without a token.
  auto bare = move_request_from_json(json{{"topic", "orders"}, {"partition", 0}, {"to", "b3"}});
  REQUIRE(bare);
  CHECK(bare->origin == "operator");
  CHECK(bare->reason.empty());
  CHECK(bare->submission.empty());
  CHECK_FALSE(to_json(*bare).contains("submission"));

  auto base = json{{"topic", "orders"}, {"partition", 0}, {"to", "b3"}};
  auto with = [&](const char* key, json value) {
    auto j = base;
    j[key] = std::move(value);
    return j;
  };
  for (const auto& bad : {json{{"partition", 0}, {"to", "b3"}}, with("partition", -1), with("partition", "0"),
                          with("to", 2), with("origin", "cron"), with("reason", 5), with("submission", ""),
                          with("submission", "a/b"), with("submission", std::string(129, 'x')), json::array()}) {
    INFO(bad.dump());
    auto r = move_request_from_json(bad);
    REQUIRE_FALSE(r);
    CHECK(r.err().code == errc::invalid_request);
  }
  CHECK(move_request_from_json(with("submission", std::string(128, 'x'))));
}
