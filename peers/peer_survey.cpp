#include "peers/peer_survey.hpp"

#include <atomic>
#include <mutex>


namespace moonmq::transport {
namespace {

using json = nlohmann::json;

struct survey_round {
  std::mutex mtx;
  std::vector<peer_answer> answers;
  std::atomic<size_t> pending{0};
  std::function<void(std::vector<peer_answer>)> done;
};

}  // namespace

void survey_peers(const std::vector<cluster_peer>& peers, const std::string& target,
                  std::chrono::milliseconds timeout, std::function<void(std::vector<peer_answer>)> done) {
  survey_peers(peers, "GET", target, timeout, std::move(done));
}

void survey_peers(const std::vector<cluster_peer>& peers, const std::string& method, const std::string& target,
                  std::chrono::milliseconds timeout, std::function<void(std::vector<peer_answer>)> done) {
  if (peers.empty()) {
    done({});
    return;
  }
  auto round = std::make_shared<survey_round>();
  round->answers.resize(peers.size());
  round->pending = peers.size();
  round->done = std::move(done);
  for (size_t i = 0; i < peers.size(); ++i) {
    round->answers[i].id = peers[i].id;
    peer_request req;
    req.method = method;
    req.target = target;
    req.timeout = timeout;
    req.idempotent = true;  // the caller's promise (see the header)
    if (!peers[i].token.empty())
      req.headers.emplace_back("X-Cluster-Token", peers[i].token);
    peers[i].client->request(std::move(req), [round, i](peer_result res) {
      {
        std::lock_guard<std::mutex> g{round->mtx};
        auto& a = round->answers[i];
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
      }
      if (--round->pending == 0) {
        // `done` may own the last reference to `round`: move it out first.
        auto finish = std::move(round->done);
        finish(std::move(round->answers));
      }
    });
  }
}

void call_peer(const cluster_peer& peer, const std::string& method, const std::string& target, std::string body,
               int64_t epoch, const std::string& controller, std::chrono::milliseconds timeout,
               std::function<void(int status, json body, std::string error)> done) {
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
      done(0, nullptr, id + ": " + res.error_message);
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
    done(res.status, std::move(j), std::move(error));
  });
}

}  // namespace moonmq::transport
