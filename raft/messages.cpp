#include "raft/messages.hpp"

#include <nlohmann/json.hpp>

#include "raft/json_reader.hpp"

namespace moonmq::raft {

using nlohmann::json;

namespace {

template <class... Fs>
struct overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
overloaded(Fs...) -> overloaded<Fs...>;

json body_json(const message_body& b) {
  return std::visit(
      overloaded{
          [](const vote_request& v) {
            return json{{"last_log_index", v.last_log_index.value},
                        {"last_log_term", v.last_log_term.value},
                        {"pre_vote", v.pre_vote}};
          },
          [](const vote_response& v) { return json{{"granted", v.granted}, {"pre_vote", v.pre_vote}}; },
          [](const append_request& a) {
            json entries = json::array();
            for (const auto& e : a.entries)
              entries.push_back(to_json(e));
            return json{{"prev_index", a.prev_index.value},
                        {"prev_term", a.prev_term.value},
                        {"commit", a.commit.value},
                        {"entries", std::move(entries)},
                        {"seq", a.seq},
                        {"echo", a.echo}};
          },
          [](const append_response& a) {
            return json{{"success", a.success},
                        {"match_index", a.match_index.value},
                        {"reject_index", a.reject_index.value},
                        {"conflict_term", a.conflict_term.value},
                        {"conflict_index", a.conflict_index.value},
                        {"seq", a.seq},
                        {"stamp", a.stamp}};
          },
          [](const snapshot_request& s) { return json{{"snapshot", to_json(s.snap)}, {"seq", s.seq}}; },
          [](const snapshot_response& s) { return json{{"match_index", s.match_index.value}, {"seq", s.seq}, {"stamp", s.stamp}};
          },
      },
      b);
}

}  // namespace

const char* type_name(const message& m) {
  static const char* names[] = {"vote_request",    "vote_response",    "append_request",
                                "append_response", "snapshot_request", "snapshot_response"};
  return names[m.body.index()];
}

const char* route_for(const message& m) {
  static const char* routes[] = {"/cluster/raft/vote", "/cluster/raft/append", "/cluster/raft/snapshot"};
  return routes[m.body.index() / 2];
}

bool is_request(const message& m) {
  return m.body.index() % 2 == 0;
}

json to_json(const message& m) {
  json j = body_json(m.body);
  j["type"] = type_name(m);
  j["from"] = m.from.str();
  j["to"] = m.to.str();
  j["term"] = m.msg_term.value;
  return j;
}

result<message> message_from_json(const json& j) {
  detail::json_reader r(j, "message");
  message m;
  std::string type = r.string("type");
  m.from = r.node("from", false);
  m.to = r.node("to", false);
  m.msg_term = term{r.u64("term")};
  if (!r.ok())
    return r.err();
  detail::json_reader b(j, type);
  if (type == "vote_request") {
    vote_request v;
    v.last_log_index = log_index{b.u64("last_log_index")};
    v.last_log_term = term{b.u64("last_log_term")};
    v.pre_vote = b.boolean("pre_vote");
    m.body = v;
  } else if (type == "vote_response") {
    vote_response v;
    v.granted = b.boolean("granted");
    v.pre_vote = b.boolean("pre_vote");
    m.body = v;
  } else if (type == "append_request") {
    append_request a;
    a.prev_index = log_index{b.u64("prev_index")};
    a.prev_term = term{b.u64("prev_term")};
    a.commit = log_index{b.u64("commit")};
    a.seq = b.has("seq") ? b.u64("seq") : 0;
    a.echo = b.has("echo") ? b.u64("echo") : 0;
    const json* entries = b.array("entries");
    if (entries) {
      log_index expect = a.prev_index.next();
      for (const auto& ej : *entries) {
        auto e = entry_from_json(ej);
        if (!e)
          return error{errc::malformed, "append_request.entries[]: " + e.err().message, {}, 0};
        if (e->index != expect)
          return error{errc::malformed, "append_request.entries: indexes must be contiguous from prev_index + 1", {}, 0};
        if (e->entry_term > m.msg_term)
          return error{errc::malformed, "append_request.entries: entry term above message term", {}, 0};
        expect = expect.next();
        a.entries.push_back(std::move(*e));
      }
    }
    m.body = std::move(a);
  } else if (type == "append_response") {
    append_response a;
    a.success = b.boolean("success");
    a.match_index = log_index{b.u64("match_index")};
    a.reject_index = log_index{b.u64("reject_index")};
    a.conflict_term = term{b.u64("conflict_term")};
    a.conflict_index = log_index{b.u64("conflict_index")};
    a.seq = b.has("seq") ? b.u64("seq") : 0;
    a.stamp = b.has("stamp") ? b.u64("stamp") : 0;
    m.body = a;
  } else if (type == "snapshot_request") {
    snapshot_request s;
    const json* sj = b.object("snapshot");
    if (sj) {
      auto snap = snapshot_from_json(*sj);
      if (!snap)
        return snap.err();
      s.snap = std::move(*snap);
    }
    s.seq = b.has("seq") ? b.u64("seq") : 0;
    m.body = std::move(s);
  } else if (type == "snapshot_response") {
    snapshot_response s;
    s.match_index = log_index{b.u64("match_index")};
    s.seq = b.has("seq") ? b.u64("seq") : 0;
    s.stamp = b.has("stamp") ? b.u64("stamp") : 0;
    m.body = s;
  } else {
    return error{errc::malformed, "message.type: unknown type \"" + type + "\"", {}, 0};
  }
  if (!b.ok())
    return b.err();
  return m;
}

result<message> parse_message(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return error{errc::malformed, "message: body is not valid JSON", {}, 0};
  return message_from_json(j);
}

std::string describe(const message& m) {
  std::string out = std::string(type_name(m)) + " " + m.from.str() + "->" + m.to.str() +
                    " term=" + std::to_string(m.msg_term.value);
  std::visit(overloaded{
                 [&](const vote_request& v) {
                   out += " last=" + std::to_string(v.last_log_term.value) + "/" +
                          std::to_string(v.last_log_index.value) + (v.pre_vote ? " pre" : "");
                 },
                 [&](const vote_response& v) {
                   out += std::string(v.granted ? " granted" : " rejected") + (v.pre_vote ? " pre" : "");
                 },
                 [&](const append_request& a) {
                   out += " prev=" + std::to_string(a.prev_term.value) + "/" + std::to_string(a.prev_index.value) +
                          " n=" + std::to_string(a.entries.size()) + " commit=" + std::to_string(a.commit.value);
                 },
                 [&](const append_response& a) {
                   out += a.success ? " ok match=" + std::to_string(a.match_index.value)
                                    : " reject at=" + std::to_string(a.reject_index.value) +
                                          " hint=" + std::to_string(a.conflict_term.value) + "/" +
                                          std::to_string(a.conflict_index.value);
                 },
                 [&](const snapshot_request& s) {
                   out += " snap=" + std::to_string(s.snap.last_term.value) + "/" +
                          std::to_string(s.snap.last_index.value);
                 },
                 [&](const snapshot_response& s) { out += " match=" + std::to_string(s.match_index.value); },
             },
             m.body);
  return out;
}

}  // namespace moonmq::raft
