// Wire messages and entries: JSON shapes, round trips, strict validation.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core_fixture.hpp"
#include "raft/messages.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;
using nlohmann::json;

namespace {

message round_trip(const message& m) {
  auto back = parse_message(to_json(m).dump());
  REQUIRE(back.ok());
  CHECK(to_json(*back) == to_json(m));
  CHECK(back->from == m.from);
  CHECK(back->to == m.to);
  CHECK(back->msg_term == m.msg_term);
  CHECK(back->body.index() == m.body.index());
  return *back;
}

}  // namespace

TEST_CASE("entries have the documented JSON shape", "[raft][wire]") {
  json c = to_json(log_entry{term{3}, log_index{7}, controller_entry{id("b1")}});
  CHECK(c == json::parse(R"({"term":3,"index":7,"type":"controller","leader":"b1"})"));
  json o = to_json(owner_at(3, 8, "orders", 3, "b2"));
  CHECK(o == json::parse(R"({"term":3,"index":8,"type":"owner","topic":"orders","partition":3,"owner":"b2"})"));
  auto back = entry_from_json(o);
  REQUIRE(back.ok());
  CHECK(*back == owner_at(3, 8, "orders", 3, "b2"));
}

TEST_CASE("every message type survives a JSON round trip", "[raft][wire]") {
  round_trip(msg("b1", "b2", 4, vote_request{log_index{9}, term{3}, true}));
  round_trip(msg("b2", "b1", 4, vote_response{true, false}));
  auto a = round_trip(msg("b1", "b2", 4,
                          append_request{log_index{2}, term{1}, log_index{2},
                                         {owner_at(4, 3), log_entry{term{4}, log_index{4}, controller_entry{id("b1")}}}}));
  CHECK(std::get<append_request>(a.body).entries.size() == 2);
  round_trip(msg("b2", "b1", 4, append_response{false, log_index{0}, log_index{5}, term{2}, log_index{3}}));
  snapshot s;
  s.last_index = log_index{12};
  s.last_term = term{3};
  s.controller = id("b1");
  s.owners[{"orders", 1}] = id("b3");
  auto sm = round_trip(msg("b1", "b2", 4, snapshot_request{s}));
  CHECK(std::get<snapshot_request>(sm.body).snap == s);
  round_trip(msg("b2", "b1", 4, snapshot_response{log_index{12}}));
}

TEST_CASE("messages map to the cluster raft routes", "[raft][wire]") {
  CHECK(std::string(route_for(msg("b1", "b2", 1, vote_request{}))) == "/cluster/raft/vote");
  CHECK(std::string(route_for(msg("b1", "b2", 1, vote_response{}))) == "/cluster/raft/vote");
  CHECK(std::string(route_for(msg("b1", "b2", 1, append_request{}))) == "/cluster/raft/append");
  CHECK(std::string(route_for(msg("b1", "b2", 1, snapshot_response{}))) == "/cluster/raft/snapshot");
  CHECK(is_request(msg("b1", "b2", 1, snapshot_request{})));
  CHECK_FALSE(is_request(msg("b1", "b2", 1, append_response{})));
}

TEST_CASE("malformed messages are error values naming the problem", "[raft][wire]") {
  auto bad = [](const std::string& text) {
    auto r = parse_message(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::malformed);
    return r.err().message;
  };
  std::string ok_vote = R"({"type":"vote_request","from":"b1","to":"b2","term":2,"last_log_index":1,"last_log_term":1,"pre_vote":false})";
  REQUIRE(parse_message(ok_vote).ok());

  CHECK_THAT(bad("{not json"), Catch::Contains("not valid JSON"));
  CHECK_THAT(bad("[1,2]"), Catch::Contains("object"));
  CHECK_THAT(bad(R"({"type":"gossip","from":"b1","to":"b2","term":1})"), Catch::Contains("gossip"));
  CHECK_THAT(bad(R"({"type":"vote_request","from":"b1","to":"b2","term":-2,"last_log_index":1,"last_log_term":1,"pre_vote":false})"),
             Catch::Contains("term"));
  CHECK_THAT(bad(R"({"type":"vote_request","from":"b 1","to":"b2","term":2,"last_log_index":1,"last_log_term":1,"pre_vote":false})"),
             Catch::Contains("from"));
  CHECK_THAT(bad(R"({"type":"vote_request","from":"b1","to":"b2","term":2,"last_log_index":1,"last_log_term":1})"),
             Catch::Contains("pre_vote"));
  CHECK_THAT(bad(R"({"type":"vote_response","from":"b1","to":"b2","term":2,"granted":"yes","pre_vote":false})"),
             Catch::Contains("granted"));
  CHECK_THAT(bad(R"({"type":"append_request","from":"b1","to":"b2","term":2,"prev_index":1,"prev_term":1,"commit":1,"entries":{}})"),
             Catch::Contains("entries"));
  // entries must be contiguous from prev_index + 1 and not from a future term
  CHECK_THAT(bad(R"({"type":"append_request","from":"b1","to":"b2","term":2,"prev_index":1,"prev_term":1,"commit":1,
                    "entries":[{"term":2,"index":3,"type":"controller","leader":"b1"}]})"),
             Catch::Contains("contiguous"));
  CHECK_THAT(bad(R"({"type":"append_request","from":"b1","to":"b2","term":2,"prev_index":1,"prev_term":1,"commit":1,
                    "entries":[{"term":5,"index":2,"type":"controller","leader":"b1"}]})"),
             Catch::Contains("term"));
  CHECK_THAT(bad(R"({"type":"append_request","from":"b1","to":"b2","term":2,"prev_index":0,"prev_term":0,"commit":0,
                    "entries":[{"term":2,"index":1,"type":"owner","topic":"a..b","partition":0,"owner":"b1"}]})"),
             Catch::Contains("topic"));
  CHECK_THAT(bad(R"({"type":"append_request","from":"b1","to":"b2","term":2,"prev_index":0,"prev_term":0,"commit":0,
                    "entries":[{"term":2,"index":1,"type":"owner","topic":"t","partition":-1,"owner":"b1"}]})"),
             Catch::Contains("partition"));
  CHECK_THAT(bad(R"({"type":"snapshot_request","from":"b1","to":"b2","term":2,"snapshot":{"last_index":1,"last_term":1,
                    "controller":"b1","owners":[{"topic":"t","partition":0,"owner":"b1"},{"topic":"t","partition":0,"owner":"b2"}]}})"),
             Catch::Contains("duplicate"));
  CHECK_THAT(bad(R"({"type":"snapshot_response","from":"b1","to":"b2","term":2})"), Catch::Contains("match_index"));
}

TEST_CASE("hard state and snapshot JSON decode strictly", "[raft][wire]") {
  auto h = hard_state_from_json(json::parse(R"({"term":3,"vote":"","commit":2})"));
  REQUIRE(h.ok());
  CHECK(h->voted_for.empty());
  CHECK_FALSE(hard_state_from_json(json::parse(R"({"term":3,"vote":7,"commit":2})")).ok());
  CHECK_FALSE(snapshot_from_json(json::parse(R"({"last_index":1,"last_term":1,"controller":"b1"})")).ok());
  CHECK_FALSE(valid_topic(".."));
  CHECK(valid_topic("orders.v2"));
  CHECK_FALSE(valid_node_id(""));
}

TEST_CASE("a register entry carries the broker's endpoints, in entries and snapshots", "[raft][wire]") {
  broker_entry b{id("b4"), broker_change::register_broker, {"127.0.0.1:7104", "127.0.0.1:7004", ""}};
  json j = to_json(log_entry{term{2}, log_index{9}, b});
  CHECK(j == json::parse(R"({"term":2,"index":9,"type":"broker","id":"b4","change":"register",
                             "cluster":"127.0.0.1:7104","client":"127.0.0.1:7004","kafka":""})"));
  auto back = entry_from_json(j);
  REQUIRE(back.ok());
  CHECK(std::get<broker_entry>(back->payload) == b);
  // The cluster listener is what the leader replicates to: it is required.
  auto bad = payload_from_json(json::parse(R"({"type":"broker","id":"b4","change":"register"})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.err().message.find("cluster") != std::string::npos);

  snapshot s;
  s.last_index = log_index{9};
  s.last_term = term{2};
  s.registered[id("b4")] = b.endpoints;
  auto sj = to_json(s);
  CHECK(sj["registered"] == json::parse(R"([{"id":"b4","cluster":"127.0.0.1:7104","client":"127.0.0.1:7004",
                                              "kafka":""}])"));
  auto sback = snapshot_from_json(sj);
  REQUIRE(sback.ok());
  CHECK(*sback == s);
  sj["registered"].push_back(sj["registered"][0]);
  CHECK_FALSE(snapshot_from_json(sj).ok());  // a broker registered twice
  sj.erase("registered");
  auto older = snapshot_from_json(sj);  // written before registrations existed
  REQUIRE(older.ok());
  CHECK(older->registered.empty());
}
