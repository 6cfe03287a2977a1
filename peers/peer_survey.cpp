#include "peers/peer_survey.hpp"

#include "util/fan_in.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

}  // namespace

void survey_peers(const std::vector<cluster_peer>& peers, const std::string& target,
                  std::chrono::milliseconds timeout, std::function<void(std::vector<peer_answer>)> done) {
  survey_peers(peers, "GET", target, timeout, std::move(done));
}

void survey_peers(const std::vector<cluster_peer>& peers, const std::string& method, const std::string& target,
                  std::chrono::milliseconds timeout, std::function<void(std::vector<peer_answer>)> done) {
  std::vector<peer_answer> answers(peers.size());
  for (size_t i = 0; i < peers.size(); ++i)
    answers[i].id = peers[i].id;
  auto round = util::fan_in<std::vector<peer_answer>>::make(
    peers.size(), std::move(answers), [done = std::move(done)](std::vector<peer_answer>& all) { done(std::move(all)); });
  for (size_t i = 0; i < peers.size(); ++i) {
    peer_request req;
    req.method = method;
    req.target = target;
    req.timeout = timeout;
    req.idempotent = true;  // the caller's promise (see the header)
    if (!peers[i].token.empty())
      req.headers.emplace_back("X-Cluster-Token", peers[i].token);
    peers[i].client->request(std::move(req), [round, i](peer_result res) {
      round->add([&](std::vector<peer_answer>& all) {
        auto& a = all[i];
        a.status = res.status;
        if (!res.ok()) {
          a.error = res.error_message;
        } else if (res.status != 200) {
          a.error = "HTTP " + std::to_string(res.status) + ": " + res.body.substr(0, 200);
        } else {
          a.body = json::parse(res.body, nullptr, false);
          a.ok = !a.body.is_discarded();
          if (!a.ok) {
            a.error = "answer is not JSON";
            a.body = nullptr;
          }
        }
      });
    });
  }
}

std::string answer_error_code(const json& answer) {
  if (!answer.is_object())
    return {};
  auto it = answer.find("error");
  return it != answer.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

void call_peer(const cluster_peer& peer, const std::string& method, const std::string& target, std::string body,
               int64_t epoch, const std::string& controller, std::chrono::milliseconds timeout,
               std::function<void(int status, json body, std::string error)> done) {
  call_peer_reply(peer, method, target, std::move(body), epoch, controller, timeout,
                  [done = std::move(done)](peer_reply r) { done(r.status, std::move(r.body), std::move(r.error)); });
}

void call_peer_reply(const cluster_peer& peer, const std::string& method, const std::string& target, std::string body,
                     int64_t epoch, const std::string& controller, std::chrono::milliseconds timeout,
                     std::function<void(peer_reply)> done) {
  peer_request req;
  req.method = method;
  req.target = target;
  req.body = std::move(body);
  req.timeout = timeout;
  req.idempotent = method == "GET";
  if (!peer.token.empty())
    req.headers.emplace_back("X-Cluster-Token", peer.token);
  if (epoch > 0) {
    req.headers.emplace_back("X-Controller-Epoch", std::to_string(epoch));
    req.headers.emplace_back("X-Controller-Id", controller);
  }
  peer.client->request(std::move(req), [done = std::move(done), id = peer.id](peer_result res) {
    if (!res.ok()) {
      done(peer_reply{0, nullptr, id + ": " + res.error_message, res.unsent});
      return;
    }
    auto j = json::parse(res.body, nullptr, false);
    if (j.is_discarded())
      j = nullptr;
    std::string error;
    if (res.status >= 300) {
      error = id + ": HTTP " + std::to_string(res.status);
      if (j.is_object() && j.contains("message") && j["message"].is_string())
        error += ": " + j["message"].get<std::string>();
    }
    done(peer_reply{res.status, std::move(j), std::move(error), false});
  });
}

}  // namespace moonmq::transport
