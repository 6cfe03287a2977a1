// peers/ over a stand-in link (no sockets): what call_peer sends (the
// cluster token, the controller headers, idempotent only for GET) and how
// it reports answers; survey_peers' answers in the order of the peers, one
// per peer, whatever each answered; the peer directory's learning,
// replacing and closing of links; a move's submission sent again with its
// token only when no answer came.

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "peers/move_submit.hpp"
#include "peers/peer_directory.hpp"
#include "peers/peer_survey.hpp"

using namespace moonmq;
using namespace moonmq::transport;

namespace {

/// A link that records every request and answers from `answers` (target →
/// result; unknown targets fail as a transport would).
struct stand_in_link : peer_link {
  std::mutex mtx;
  std::vector<peer_request> seen;
  std::map<std::string, peer_result> answers;
  std::map<std::string, int> fail_first;  ///< target -> requests that fail before `answers` applies
  bool failures_unsent = false;           ///< failures say the request never left (peer_result::unsent)
  bool closed = false;

  void request(peer_request req, peer_callback done) override {
    peer_result r;
    {
      std::lock_guard<std::mutex> g{mtx};
      seen.push_back(req);
      auto it = answers.find(req.target);
      auto& failing = fail_first[req.target];
      if (closed || it == answers.end() || failing-- > 0) {
        r.error = std::make_error_code(std::errc::connection_refused);
        r.error_message = closed ? "closed" : "connect refused";
        r.unsent = failures_unsent;
      } else {
        r = it->second;
      }
    }
    done(std::move(r));
  }
  void close() override { closed = true; }
  int open_connections() const override { return 0; }
  int connections_opened() const override { return 0; }
};

peer_result answer(int status, std::string body) {
  peer_result r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::string header(const peer_request& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name)
      return v;
  return "<none>";
}

}  // namespace

TEST_CASE("call_peer sends the cluster token and the controller headers and reports the answer",
          "[peers]") {
  auto link = std::make_shared<stand_in_link>();
  link->answers["/cluster/moves"] = answer(409, R"({"error":"conflict","message":"already moving"})");
  cluster_peer p{"b2", "127.0.0.1:1", "", "secret", link, ""};
  int status = -1;
  nlohmann::json body;
  std::string error;
  call_peer(p, "POST", "/cluster/moves", R"({"x":1})", 7, "b1", std::chrono::milliseconds(250),
            [&](int s, nlohmann::json b, std::string e) {
              status = s;
              body = std::move(b);
              error = std::move(e);
            });
  REQUIRE(link->seen.size() == 1);
  const auto& sent = link->seen[0];
  CHECK(sent.method == "POST");
  CHECK(sent.body == R"({"x":1})");
  CHECK(sent.timeout == std::chrono::milliseconds(250));
  CHECK_FALSE(sent.idempotent);  // a POST is never retried
  CHECK(header(sent, "X-Cluster-Token") == "secret");
  CHECK(header(sent, "X-Controller-Epoch") == "7");
  CHECK(header(sent, "X-Controller-Id") == "b1");
  CHECK(status == 409);
  CHECK(body["error"] == "conflict");
  CHECK(error == "b2: HTTP 409: already moving");

  // Epoch 0: no controller headers; a GET may be retried; a failed exchange
  // is status 0 with the peer named.
  call_peer(p, "GET", "/nowhere", "", 0, "", std::chrono::milliseconds(100),
            [&](int s, nlohmann::json b, std::string e) {
              status = s;
              body = std::move(b);
              error = std::move(e);
            });
  REQUIRE(link->seen.size() == 2);
  CHECK(header(link->seen[1], "X-Controller-Epoch") == "<none>");
  CHECK(link->seen[1].idempotent);
  CHECK(status == 0);
  CHECK(body.is_null());
  CHECK(error == "b2: connect refused");
}

TEST_CASE("survey_peers answers once, one answer per peer in the peers' order", "[peers]") {
  auto good = std::make_shared<stand_in_link>();
  good->answers["/cluster/loads"] = answer(200, R"({"partitions":3})");
  auto busy = std::make_shared<stand_in_link>();
  busy->answers["/cluster/loads"] = answer(503, "draining");
  auto garbled = std::make_shared<stand_in_link>();
  garbled->answers["/cluster/loads"] = answer(200, "not json");
  auto dead = std::make_shared<stand_in_link>();
  std::vector<cluster_peer> peers{{"b2", "a2", "", "", good, ""},
                                  {"b3", "a3", "", "", busy, ""},
                                  {"b4", "a4", "", "", garbled, ""},
                                  {"b5", "a5", "", "", dead, ""}};
  int calls = 0;
  std::vector<peer_answer> got;
  survey_peers(peers, "/cluster/loads", std::chrono::milliseconds(100), [&](std::vector<peer_answer> a) {
    ++calls;
    got = std::move(a);
  });
  CHECK(calls == 1);
  REQUIRE(got.size() == 4);
  CHECK(got[0].id == "b2");
  CHECK(got[0].ok);
  CHECK(got[0].body["partitions"] == 3);
  CHECK_FALSE(got[1].ok);
  CHECK(got[1].status == 503);
  CHECK(got[1].error == "HTTP 503: draining");
  CHECK_FALSE(got[2].ok);
  CHECK(got[2].error == "answer is not JSON");
  CHECK(got[2].body.is_null());
  CHECK_FALSE(got[3].ok);
  CHECK(got[3].status == 0);
  CHECK(good->seen.at(0).idempotent);  // a survey's requests may be retried

  calls = 0;
  survey_peers({}, "/cluster/loads", std::chrono::milliseconds(100), [&](std::vector<peer_answer> a) {
    ++calls;
    CHECK(a.empty());
  });
  CHECK(calls == 1);  // no peers: answered at once
}

TEST_CASE("the peer directory learns registered brokers, replaces a moved one's link and closes every link",
          "[peers]") {
  std::vector<std::shared_ptr<stand_in_link>> made;
  auto connect = [&](const std::string&, const std::string& address) -> std::shared_ptr<peer_link> {
    if (address.empty())
      return nullptr;  // an unusable address
    made.push_back(std::make_shared<stand_in_link>());
    return made.back();
  };
  auto configured = std::make_shared<stand_in_link>();
  peer_directory dir({{"b2", "a2", "", "t", configured, ""}}, connect, "t");
  std::map<std::string, cluster::broker_endpoints> registered{
    {"b1", {"a1", "c1", "k1"}}, {"b2", {"other", "c2", "k2"}}, {"b4", {"a4", "c4", "k4"}}, {"b5", {"", "", ""}}};
  // b1 is this broker, b2 is configured (keeps its address), b5's address is unusable.
  CHECK(dir.learn("b1", registered) == std::vector<std::string>{"b4"});
  CHECK(dir.size() == 2);
  CHECK(dir.find("b2")->address == "a2");
  CHECK(dir.find("b4")->client_address == "c4");
  CHECK(dir.find("b4")->token == "t");
  REQUIRE(made.size() == 1);

  // b4 registers a new cluster address: a new link, the old one retired.
  registered["b4"] = {"a4-new", "c4", "k4"};
  CHECK(dir.learn("b1", registered) == std::vector<std::string>{"b4"});
  REQUIRE(made.size() == 2);
  CHECK(dir.find("b4")->address == "a4-new");
  CHECK_FALSE(made[0]->closed);  // closed with the rest at close()

  // b4 leaves the registered brokers: dropped.
  registered.erase("b4");
  CHECK(dir.learn("b1", registered).empty());
  CHECK_FALSE(dir.find("b4"));
  CHECK(dir.all().size() == 1);

  dir.close();
  CHECK(configured->closed);
  CHECK(made[0]->closed);
  CHECK(made[1]->closed);
  CHECK_FALSE(dir.connect("b6", "a6").client);  // nothing is made after close()
}

TEST_CASE("peers: a move submission is sent again with the same token only while no answer comes",
          "[peers][unit]") {
  auto link = std::make_shared<stand_in_link>();
  cluster_peer peer{"b1", "127.0.0.1:1", "", "", link, ""};
  link->answers["/cluster/moves"] = answer(202, R"({"move_id":"b1-7","state":"queued"})");
  auto submit = [&](int lost) {
    link->seen.clear();
    link->fail_first["/cluster/moves"] = lost;
    move_submit_outcome got;
    cluster::move_request m{cluster::topic_partition{"orders", 3}, "b2", "operator", "", ""};
    submit_move(peer, m, 4, "b9", std::chrono::milliseconds{100}, [&](move_submit_outcome o) { got = std::move(o); });
    return got;
  };

  // Two exchanges without an answer, then the source's row.
  auto queued = submit(2);
  CHECK(queued.status == 202);
  CHECK(queued.attempts == 3);
  CHECK(queued.body["move_id"] == "b1-7");
  REQUIRE(link->seen.size() == 3);
  std::set<std::string> tokens;
  for (const auto& r : link->seen) {
    CHECK(r.method == "POST");
    CHECK(header(r, "X-Controller-Epoch") == "4");
    auto body = cluster::move_request_from_json(nlohmann::json::parse(r.body));
    REQUIRE(body);
    CHECK(body->tp == (cluster::topic_partition{"orders", 3}));
    tokens.insert(body->submission);
  }
  REQUIRE(tokens.size() == 1);  // one token for every exchange
  CHECK(tokens.begin()->rfind("b9-", 0) == 0);

  // No answer at all: given up after move_submit_attempts, status 0; the
  // source may have queued it unless no request ever left.
  auto lost = submit(move_submit_attempts);
  CHECK(lost.status == 0);
  CHECK(lost.attempts == move_submit_attempts);
  CHECK_FALSE(lost.unsent);
  CHECK(link->seen.size() == static_cast<size_t>(move_submit_attempts));
  CHECK_FALSE(lost.error.empty());
  link->failures_unsent = true;
  auto unreached = submit(move_submit_attempts);
  CHECK(unreached.status == 0);
  CHECK(unreached.unsent);
  link->failures_unsent = false;

  // An answer, even a refusal, is never sent again.
  link->answers["/cluster/moves"] = answer(409, R"({"error":"move_in_progress"})");
  auto refused = submit(0);
  CHECK(refused.status == 409);
  CHECK(refused.attempts == 1);
  CHECK(link->seen.size() == 1);

  // Two submissions never share a token.
  CHECK(new_submission_token("b1") != new_submission_token("b1"));
}

TEST_CASE("peers: a peer answer's error code, never a throw on a malformed one", "[peers][unit]") {
  CHECK(answer_error_code(nlohmann::json::parse(R"({"error":"move_in_progress","message":"m"})")) == "move_in_progress");
  CHECK(answer_error_code(nlohmann::json::parse(R"({"error":7})")).empty());
  CHECK(answer_error_code(nlohmann::json::parse(R"({"message":"m"})")).empty());
  CHECK(answer_error_code(nlohmann::json::parse(R"(["error"])")).empty());
  CHECK(answer_error_code(nullptr).empty());
}
