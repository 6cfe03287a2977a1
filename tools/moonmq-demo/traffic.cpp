// moonmq-demo: producer threads (skewed batches, acks=leader, every
// acknowledged offset kept) and one consumer-group member per topic
// (fetch from the owner, follow 421 not_owner, commit at the owner).

#include <thread>

#include "tools/moonmq-demo/demo.hpp"

namespace moonmq::demo {
namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// Problems kept per partition (the count is what fails verification).
constexpr size_t max_problems_kept = 20;

void note_problem(partition_consumption& c, std::string what) {
  if (c.problems.size() < max_problems_kept)
    c.problems.push_back(std::move(what));
  else if (c.problems.size() == max_problems_kept)
    c.problems.push_back("... (more problems not shown)");
}

/// Picks the partition of the next batch: `hot_share` of the batches go to
/// the hot partitions, the rest to the others, each group split evenly.
/// Smooth weighted round robin (nginx's): deterministic and evenly spread,
/// so every partition's rate is steady from one balancer pass to the next
/// and a balanced cluster stays balanced.
class partition_picker {
public:
  partition_picker(const run& r, int offset) {
    std::vector<tp_key> hot, cold;
    for (const auto& tp : r.partitions) {
      bool is_hot = false;
      for (const auto& h : r.hot)
        is_hot = is_hot || !(h < tp || tp < h);
      (is_hot ? hot : cold).push_back(tp);
    }
    double hot_share = cold.empty() ? 1.0 : hot.empty() ? 0.0 : r.opt.hot_share;
    for (const auto& tp : hot)
      entries_.push_back({tp, hot_share / static_cast<double>(hot.size()), 0.0});
    for (const auto& tp : cold)
      entries_.push_back({tp, (1.0 - hot_share) / static_cast<double>(cold.size()), 0.0});
    // Producers start at different points of the cycle.
    for (int i = 0; i < offset; ++i)
      next();
  }
  const tp_key& next() {
    entry* best = nullptr;
    double total = 0;
    for (auto& e : entries_) {
      e.credit += e.weight;
      total += e.weight;
      if (!best || e.credit > best->credit)
        best = &e;
    }
    best->credit -= total;
    return best->tp;
  }

private:
  struct entry {
    tp_key tp;
    double weight;
    double credit;
  };
  std::vector<entry> entries_;
};

/// Where a produce to `tp` goes: its owner as last seen, unless the owner
/// refused or dropped a connection within the last second (a dead broker,
/// until the failover names another owner); then the first other broker
/// that did not, which forwards the produce to the owner of the moment
/// (503 while the partition is offline, retried by the loop).
std::string route(const run& r, const tp_key& tp, const std::map<std::string, clock_type::time_point>& unreachable) {
  auto now = clock_type::now();
  auto down = [&](const std::string& id) {
    auto it = unreachable.find(id);
    return it != unreachable.end() && it->second > now;
  };
  auto owner = r.owner_of(tp);
  if (!down(owner))
    return owner;
  for (const auto& b : r.opt.brokers)
    if (!down(b.id))
      return b.id;
  return owner;
}

}  // namespace

void run_producer(run& r, int index) {
  const auto& o = r.opt;
  client_pool pool{r};
  std::map<std::string, clock_type::time_point> unreachable;
  partition_picker picker{r, index * 7};
  const double per_thread = o.rate > 0 ? o.rate / o.producers : 0.0;
  auto next_send = clock_type::now();
  while (!r.stop_producers && interrupted == 0) {
    if (per_thread > 0) {
      auto now = clock_type::now();
      if (next_send > now) {
        std::this_thread::sleep_for(std::min<clock_type::duration>(next_send - now, 200ms));
        continue;
      }
      // Pace by batches; a producer that fell behind does not burst to catch up.
      next_send = std::max(next_send, now - clock_type::duration(1s)) +
                  std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.batch / per_thread));
    }
    const tp_key& tp = picker.next();
    auto& ledger = *r.ledgers.at(tp);
    const uint64_t first_seq = ledger.next_seq.fetch_add(static_cast<uint64_t>(o.batch));
    json records = json::array();
    for (int k = 0; k < o.batch; ++k)
      records.push_back({{"partition", tp.partition}, {"value", make_value(r.id, tp, first_seq + k, o.value_bytes)}});
    // Values are never re-sent: a failed request's records may or may not be
    // in the log, and a retry with the same values would make duplicates that
    // are the demo's fault, not the broker's.
    const std::string target = route(r, tp, unreachable);
    const int64_t sent_ns = steady_ns();
    auto res = pool.call(target, "POST", "/v1/topics/" + tp.topic + "/records?acks=leader",
                         json{{"records", records}}.dump(), 20s);
    auto body = res.status == 200 ? json::parse(res.body, nullptr, false) : json();
    if (res.status != 200 || !body.is_object() || !body.contains("offsets") || !body["offsets"].is_array() ||
        body["offsets"].size() != static_cast<size_t>(o.batch)) {
      if (res.status == 0)
        unreachable[target] = clock_type::now() + 1s;
      r.failed_records += static_cast<uint64_t>(o.batch);
      r.produce_errors.add(res.status == 200 ? "200 with a malformed answer" : describe_failure(res));
      std::this_thread::sleep_for(100ms);
      continue;
    }
    // Sent after the kill, so the killed broker had no part in it.
    const int64_t kill_ns = r.kill_ns;
    if (kill_ns > 0 && sent_ns > kill_ns) {
      int64_t none = 0;
      ledger.first_ack_after_kill_ns.compare_exchange_strong(none, steady_ns());
    }
    std::lock_guard<std::mutex> g{ledger.mu};
    for (int k = 0; k < o.batch; ++k) {
      const auto& a = body["offsets"][static_cast<size_t>(k)];
      auto offset = a.value("offset", int64_t{-1});
      if (a.value("partition", -1) != tp.partition || offset < 0) {
        r.produce_errors.add("answer names another partition or no offset");
        continue;
      }
      if (!ledger.acked.emplace(offset, first_seq + k).second)
        ledger.double_acks.push_back(offset);
      ++r.acked_records;
    }
  }
}

namespace {

/// One consumer: its group sessions (one per broker it commits to) and its
/// per-partition owner and commit state.
class consumer {
public:
  consumer(run& r, std::string topic) : r_(r), topic_(std::move(topic)), pool_(r) {
    for (const auto& tp : r.partitions)
      if (tp.topic == topic_)
        parts_[tp.partition] = part{tp, r.consumed.at(tp).get(), r.owner_of(tp), false, -1, {}};
  }

  void loop(std::atomic<bool>& drained) {
    join(r_.opt.brokers.front().id);
    while (!r_.stop_consumers) {
      const bool producers_done = r_.producers_stopped;
      bool any = false, all_at_end = true;
      for (auto& [p, st] : parts_) {
        auto outcome = fetch(st);
        any = any || outcome == fetched::records;
        all_at_end = all_at_end && outcome == fetched::at_end;
        maybe_commit(st, false);
      }
      heartbeat_all();
      if (producers_done && all_at_end) {
        for (auto& [p, st] : parts_)
          maybe_commit(st, true);
        drained = true;
        break;
      }
      if (!any)
        std::this_thread::sleep_for(50ms);
    }
    for (const auto& [broker, s] : sessions_)
      pool_.call(broker, "DELETE", "/v1/groups/" + r_.opt.group + "/members/" + s.member, {}, 5s);
  }

private:
  struct session {
    std::string member;
    int64_t generation = -1;
    clock_type::time_point last_beat;
  };
  struct part {
    tp_key tp;
    partition_consumption* c = nullptr;
    std::string owner;
    bool reposition = false;  ///< owner changed: resume from its committed offset once it serves us
    int64_t committed = -1;
    clock_type::time_point last_commit;
  };
  enum class fetched { records, at_end, behind, failed };

  session* join(const std::string& broker) {
    auto& s = sessions_[broker];
    for (int attempt = 0; attempt < 2; ++attempt) {
      json body{{"topics", {topic_}}};
      if (!s.member.empty())
        body["member_id"] = s.member;
      auto res = pool_.call(broker, "POST", "/v1/groups/" + r_.opt.group + "/members", body.dump(), 10s);
      auto j = json::parse(res.body, nullptr, false);
      if (res.status == 200 && j.is_object() && j.contains("member_id")) {
        s.member = j["member_id"].get<std::string>();
        s.generation = j.value("generation", int64_t{-1});
        s.last_beat = clock_type::now();
        return &s;
      }
      r_.consume_errors.add("join " + describe_failure(res));
      s.member.clear();  // evicted or unknown there: join as a new member
    }
    sessions_.erase(broker);
    return nullptr;
  }

  void heartbeat_all() {
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      auto& [broker, s] = *it;
      if (clock_type::now() - s.last_beat < 2s) {
        ++it;
        continue;
      }
      s.last_beat = clock_type::now();
      auto res = pool_.call(broker, "POST", "/v1/groups/" + r_.opt.group + "/members/" + s.member + "/heartbeat", {}, 10s);
      auto j = json::parse(res.body, nullptr, false);
      if (res.status == 200 && j.is_object()) {
        s.generation = j.value("generation", s.generation);
        ++it;
      } else {
        if (res.status != 404)
          r_.consume_errors.add("heartbeat " + describe_failure(res));
        it = sessions_.erase(it);  // joined again when next needed
      }
    }
  }

  fetched fetch(part& st) {
    auto& c = *st.c;
    int64_t pos = c.position;
    auto res = pool_.call(st.owner, "GET",
                          "/v1/topics/" + topic_ + "/partitions/" + std::to_string(st.tp.partition) +
                            "/records?max_records=500&offset=" + std::to_string(pos),
                          {}, 15s);
    auto j = json::parse(res.body, nullptr, false);
    if (res.status == 421 && j.is_object()) {
      auto owner = j.value("owner", json()).is_string() ? j["owner"].get<std::string>() : std::string{};
      if (!owner.empty() && owner != st.owner && r_.broker(owner)) {
        st.owner = owner;
        st.reposition = true;
        r_.set_owner(st.tp, owner);
      } else {
        std::this_thread::sleep_for(20ms);  // between cutover and confirm nobody serves it
      }
      return fetched::failed;
    }
    if (res.status != 200 || !j.is_object() || !j.contains("records") || !j["records"].is_array()) {
      r_.consume_errors.add("fetch " + describe_failure(res));
      if (res.status == 0 || res.status == 404) {
        // The broker we knew is gone or does not hold it: ask the monitor's view.
        auto known = r_.owner_of(st.tp);
        if (known != st.owner) {
          st.owner = known;
          st.reposition = true;
        }
      }
      return fetched::failed;
    }
    if (st.reposition) {
      st.reposition = false;
      reposition(st);
      return fetched::behind;  // read again from the (maybe earlier) position
    }
    int64_t expected = pos;
    for (const auto& rec : j["records"]) {
      int64_t off = rec.value("offset", int64_t{-1});
      if (off != expected)
        note_problem(c, "delivered offset " + std::to_string(off) + " where " + std::to_string(expected) +
                          " was next (gap or out of order)");
      expected = off + 1;
      ++c.deliveries;
      ++r_.delivered_records;
      auto value = rec.value("value", json()).is_string() ? rec["value"].get<std::string>() : std::string{};
      auto seq = parse_value(value, r_.id, st.tp, r_.opt.value_bytes);
      if (!seq) {
        ++c.foreign;
        continue;
      }
      auto [it, fresh] = c.delivered.emplace(off, *seq);
      if (!fresh) {
        ++c.repeats;
        if (it->second != *seq)
          note_problem(c, "offset " + std::to_string(off) + " delivered as seq " + std::to_string(it->second) +
                            ", later as seq " + std::to_string(*seq));
      }
    }
    int64_t next = j.value("next_offset", expected);
    int64_t end = j.value("log_end_offset", next);
    c.position = next;
    c.log_end = end;
    if (!j["records"].empty())
      return fetched::records;
    return next >= end ? fetched::at_end : fetched::behind;
  }

  /// The partition now answers at a new owner: resume from the group's
  /// committed offset there, as a consumer does after a rebalance. The
  /// offsets the move pushed make that at most a few repeats.
  void reposition(part& st) {
    auto& c = *st.c;
    auto res = pool_.call(st.owner, "GET", "/v1/groups/" + r_.opt.group + "/offsets?topic=" + topic_, {}, 10s);
    auto j = json::parse(res.body, nullptr, false);
    std::optional<int64_t> committed;
    if (res.status == 200 && j.is_object() && j.contains("offsets") && j["offsets"].is_array())
      for (const auto& e : j["offsets"])
        if (e.value("topic", "") == topic_ && e.value("partition", -1) == st.tp.partition)
          committed = e.value("offset", int64_t{-1});
    int64_t pos = c.position;
    if (!committed || *committed < 0) {
      ++c.missing_commits;
      return;  // keep reading from where we are
    }
    if (*committed > pos) {
      note_problem(c, "committed offset " + std::to_string(*committed) + " at " + st.owner +
                        " is ahead of the consumer's " + std::to_string(pos));
      return;
    }
    ++c.repositions;
    c.position = *committed;
    st.committed = *committed;
  }

  void maybe_commit(part& st, bool force) {
    int64_t pos = st.c->position;
    if (pos == st.committed || st.reposition || (!force && clock_type::now() - st.last_commit < 500ms))
      return;
    st.last_commit = clock_type::now();
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto it = sessions_.find(st.owner);
      session* s = it != sessions_.end() ? &it->second : join(st.owner);
      if (!s)
        return;
      json body{{"offsets", {{{"topic", topic_}, {"partition", st.tp.partition}, {"offset", pos}}}},
                {"generation", s->generation},
                {"member_id", s->member}};
      auto res = pool_.call(st.owner, "POST", "/v1/groups/" + r_.opt.group + "/offsets", body.dump(), 10s);
      if (res.status == 200) {
        st.committed = pos;
        return;
      }
      auto err = describe_failure(res);
      if (res.status == 409) {  // another member joined: pick up the new generation
        s->last_beat = {};
        heartbeat_all();
        continue;
      }
      if (res.status == 404) {  // evicted: join again
        sessions_.erase(st.owner);
        continue;
      }
      if (res.status != 421)  // 421: moved; the next fetch finds the owner
        r_.consume_errors.add("commit " + err);
      return;
    }
  }

  run& r_;
  std::string topic_;
  client_pool pool_;
  std::map<int32_t, part> parts_;
  std::map<std::string, session> sessions_;
};

}  // namespace

void run_consumer(run& r, const std::string& topic, std::atomic<bool>& drained) {
  consumer c{r, topic};
  c.loop(drained);
}

}  // namespace moonmq::demo
