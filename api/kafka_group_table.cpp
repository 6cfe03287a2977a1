// kafka_group_table (api/kafka_groups.hpp): the Kafka consumer
// groups' membership state machine, without sockets or actors. The request
// handlers that drive it are api/kafka_groups.cpp.

#include "api/kafka_groups.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "kafka/wire.hpp"

namespace moonmq::transport {

namespace ec = kafka::error_code;
using std::chrono::milliseconds;
using json = nlohmann::json;

// --- membership state machine ------------------------------------------------------

struct kafka_group_table::impl {
  enum class phase { empty, preparing, completing, stable };
  struct member {
    std::string id;
    std::optional<std::string> instance_id;
    milliseconds session{45000};
    milliseconds rebalance{300000};
    std::vector<kafka::join_group_protocol> protocols;
    clock::time_point seen;
    std::function<void(kafka::join_group_response)> join;  ///< parked JoinGroup
    std::function<void(kafka::sync_group_response)> sync;  ///< parked SyncGroup
    std::string assignment;
    std::string client_id;    ///< of its last JoinGroup (DescribeGroups)
    std::string client_host;  ///< "/<address>" of the connection of its last JoinGroup
  };
  struct group {
    phase state = phase::empty;
    int32_t generation = 0;
    std::string protocol_type;
    std::string protocol;
    std::string leader;
    std::map<std::string, member> members;
    /// KIP-345 static members: group instance id -> its current member id.
    std::map<std::string, std::string> statics;
    clock::time_point deadline;  ///< PreparingRebalance: when the join round closes
    /// The first round of a group that was Empty waits until then for more
    /// members (Kafka's InitialDelayedJoin); unset otherwise.
    std::optional<clock::time_point> initial_until;
    clock::time_point initial_limit;  ///< the latest initial_until may move to
  };
  using actions = std::vector<std::function<void()>>;

  /// Kafka's group.initial.rebalance.delay.ms (0: no delay).
  milliseconds initial_delay{0};
  mutable std::mutex mtx;
  std::map<std::string, group> groups;
  uint64_t next_member = 0;

  static const char* name(phase p) {
    switch (p) {
      case phase::empty: return "Empty";
      case phase::preparing: return "PreparingRebalance";
      case phase::completing: return "CompletingRebalance";
      default: return "Stable";
    }
  }

  /// Forgets the member at `it` (and its instance id); the next member.
  static std::map<std::string, member>::iterator erase(group& g, std::map<std::string, member>::iterator it) {
    if (it->second.instance_id) {
      auto s = g.statics.find(*it->second.instance_id);
      if (s != g.statics.end() && s->second == it->first)
        g.statics.erase(s);
    }
    return g.members.erase(it);
  }

  /// Kafka's validateCurrentMember: with an instance id, 82
  /// FENCED_INSTANCE_ID when the instance is now another member id, 25 when
  /// no member has it; then 25 when `member` is not in the group; else 0.
  static int16_t validate(const group& g, const std::string& member, const std::optional<std::string>& instance) {
    if (instance) {
      auto s = g.statics.find(*instance);
      if (s == g.statics.end())
        return ec::unknown_member_id;
      if (s->second != member)
        return ec::fenced_instance_id;
    }
    return g.members.count(member) ? int16_t{0} : ec::unknown_member_id;
  }

  /// Enters PreparingRebalance: parked SyncGroups get 27, the round closes
  /// when every member rejoined or the longest rebalance timeout passed.
  void prepare(group& g, clock::time_point now, actions& out) {
    if (g.state != phase::preparing) {
      milliseconds longest{0};
      for (auto& [id, m] : g.members)
        longest = std::max(longest, m.rebalance);
      g.deadline = now + longest;
    }
    g.state = phase::preparing;
    for (auto& [id, m] : g.members)
      if (m.sync) {
        kafka::sync_group_response r;
        r.error_code = ec::rebalance_in_progress;
        out.push_back([f = std::move(m.sync), r] { f(r); });
        m.sync = nullptr;
      }
  }

  /// Closes the join round when every member rejoined, or (force) drops
  /// those that did not.
  void maybe_complete(group& g, bool force, clock::time_point now, actions& out) {
    if (g.state != phase::preparing)
      return;
    if (!force && g.initial_until && now < *g.initial_until)
      return;  // the first round still waits for more members
    bool all = std::all_of(g.members.begin(), g.members.end(), [](auto& kv) { return bool(kv.second.join); });
    if (!all && !force)
      return;
    g.initial_until.reset();
    for (auto it = g.members.begin(); it != g.members.end();)
      it = it->second.join ? std::next(it) : erase(g, it);
    if (g.members.empty()) {
      g.state = phase::empty;
      return;
    }
    ++g.generation;
    if (!g.members.count(g.leader))
      g.leader = g.members.begin()->first;
    // The leader's first protocol that every member supports.
    g.protocol.clear();
    for (const auto& p : g.members[g.leader].protocols) {
      bool common = std::all_of(g.members.begin(), g.members.end(), [&](auto& kv) {
        return std::any_of(kv.second.protocols.begin(), kv.second.protocols.end(),
                           [&](const auto& q) { return q.name == p.name; });
      });
      if (common) {
        g.protocol = p.name;
        break;
      }
    }
    g.state = phase::completing;
    for (auto& [id, m] : g.members) {
      kafka::join_group_response r;
      r.generation_id = g.generation;
      r.protocol_name = g.protocol;
      r.leader = g.leader;
      r.member_id = id;
      if (id == g.leader)
        for (const auto& [oid, o] : g.members) {
          kafka::join_group_member jm;
          jm.member_id = oid;
          jm.group_instance_id = o.instance_id;
          for (const auto& p : o.protocols)
            if (p.name == g.protocol)
              jm.metadata = p.metadata;
          r.members.push_back(std::move(jm));
        }
      m.seen = now;
      m.assignment.clear();
      out.push_back([f = std::move(m.join), r] { f(r); });
      m.join = nullptr;
    }
  }

  /// A JoinGroup's member id for a member joining without one.
  std::string new_member_id(const std::string& client_id, clock::time_point now) {
    return (client_id.empty() ? std::string("member") : client_id) + "-" + std::to_string(++next_member) + "-"
           + std::to_string(now.time_since_epoch().count() % 1000000007);
  }

  /// What every accepted JoinGroup records of its member.
  static void refresh(member& m, const kafka::join_group_request& req, const std::string& client_id,
                      const std::string& client_host, int16_t version, clock::time_point now) {
    m.session = milliseconds{req.session_timeout_ms};
    m.rebalance =
      milliseconds{version >= 1 && req.rebalance_timeout_ms > 0 ? req.rebalance_timeout_ms : req.session_timeout_ms};
    m.protocols = req.protocols;
    m.client_id = client_id;
    m.client_host = client_host;
    m.seen = now;
  }

  /// KIP-345 (Kafka's updateStaticMemberAndRebalance): a known group
  /// instance joins without a member id, so a restarted static member (or a
  /// second process with its instance id) takes over. The instance's member
  /// gets `new_id` and keeps its assignment; a JoinGroup or SyncGroup parked
  /// under the old id gets 82 FENCED_INSTANCE_ID, as do the old id's later
  /// requests. Stable with the same protocols and metadata: answered at
  /// once with the current generation and no rebalance; the answer names
  /// the leader as it was before, so a replaced leader rejoins as a
  /// follower (it stays the group's leader, under its new id, and gets no
  /// member list, as in Kafka). Changed protocols or metadata while Stable,
  /// or CompletingRebalance: a rebalance. PreparingRebalance: it joins the
  /// round.
  void rejoin_static(group& g, const std::string& old_id, const std::string& new_id,
                     const kafka::join_group_request& req, const std::string& client_id,
                     const std::string& client_host, int16_t version,
                     std::function<void(kafka::join_group_response)> reply, clock::time_point now, actions& out) {
    const auto leader_before = g.leader;
    auto node = g.members.extract(old_id);
    auto& old = node.mapped();
    if (old.join) {
      kafka::join_group_response r;
      r.error_code = ec::fenced_instance_id;
      r.member_id = old_id;
      out.push_back([f = std::move(old.join), r] { f(r); });
      old.join = nullptr;
    }
    if (old.sync) {
      kafka::sync_group_response r;
      r.error_code = ec::fenced_instance_id;
      out.push_back([f = std::move(old.sync), r] { f(r); });
      old.sync = nullptr;
    }
    const bool same = std::equal(old.protocols.begin(), old.protocols.end(), req.protocols.begin(),
                                 req.protocols.end(), [](const auto& a, const auto& b) {
                                   return a.name == b.name && a.metadata == b.metadata;
                                 });
    node.key() = new_id;
    auto& m = g.members.insert(std::move(node)).position->second;
    m.id = new_id;
    g.statics[*req.group_instance_id] = new_id;
    if (g.leader == old_id)
      g.leader = new_id;
    refresh(m, req, client_id, client_host, version, now);
    if (g.state == phase::stable && same) {
      kafka::join_group_response r;
      r.generation_id = g.generation;
      r.protocol_name = g.protocol;
      r.leader = leader_before;
      r.member_id = new_id;
      out.push_back([reply, r] { reply(r); });
      return;
    }
    m.join = std::move(reply);
    prepare(g, now, out);
    maybe_complete(g, false, now, out);
  }

  void remove(group& g, const std::string& who, clock::time_point now, actions& out) {
    auto it = g.members.find(who);
    if (it == g.members.end())
      return;
    if (it->second.join) {
      kafka::join_group_response r;
      r.error_code = ec::unknown_member_id;
      r.member_id = who;
      out.push_back([f = std::move(it->second.join), r] { f(r); });
    }
    if (it->second.sync) {
      kafka::sync_group_response r;
      r.error_code = ec::unknown_member_id;
      out.push_back([f = std::move(it->second.sync), r] { f(r); });
    }
    erase(g, it);
    if (g.members.empty()) {
      g.state = phase::empty;
      return;
    }
    prepare(g, now, out);
    maybe_complete(g, false, now, out);
  }
};

namespace {
void run(kafka_group_table::impl::actions& out) {
  for (auto& f : out)
    f();
}
}  // namespace

kafka_group_table::kafka_group_table(milliseconds initial_rebalance_delay) : impl_(std::make_shared<impl>()) {
  impl_->initial_delay = std::max(initial_rebalance_delay, milliseconds{0});
}

void kafka_group_table::join(const kafka::join_group_request& req, const std::string& client_id, int16_t version,
                             std::function<void(kafka::join_group_response)> reply, const std::string& client_host) {
  impl::actions out;
  {
    std::lock_guard<std::mutex> lock{impl_->mtx};
    auto now = clock::now();
    auto fail = [&](int16_t code) {
      kafka::join_group_response r;
      r.error_code = code;
      r.member_id = req.member_id;
      out.push_back([reply, r] { reply(r); });
    };
    if (req.group_id.empty()) {
      fail(ec::invalid_group_id);
    } else if (req.session_timeout_ms < 1000 || req.session_timeout_ms > 1800000) {
      fail(ec::invalid_session_timeout);
    } else {
      const bool fresh = impl_->groups.count(req.group_id) == 0;
      auto& g = impl_->groups[req.group_id];
      // A refused join leaves no trace of a group nobody had joined.
      auto refuse = [&](int16_t code) {
        fail(code);
        if (fresh)
          impl_->groups.erase(req.group_id);
      };
      // A known static instance joining without a member id (KIP-345).
      std::string replaced;
      if (req.member_id.empty() && req.group_instance_id)
        if (auto s = g.statics.find(*req.group_instance_id); s != g.statics.end())
          replaced = s->second;
      const auto& self = req.member_id.empty() ? replaced : req.member_id;
      bool compatible = g.members.empty() || g.protocol_type == req.protocol_type;
      for (auto& [id, m] : g.members) {
        if (id == self)
          continue;
        compatible = compatible && std::any_of(m.protocols.begin(), m.protocols.end(), [&](const auto& p) {
                       return std::any_of(req.protocols.begin(), req.protocols.end(),
                                          [&](const auto& q) { return q.name == p.name; });
                     });
      }
      int16_t code = 0;
      if (req.protocols.empty() || !compatible)
        code = ec::inconsistent_group_protocol;
      else if (!req.member_id.empty())
        code = impl::validate(g, req.member_id, req.group_instance_id);
      if (code != 0) {
        refuse(code);
      } else if (!replaced.empty()) {
        impl_->rejoin_static(g, replaced, impl_->new_member_id(client_id, now), req, client_id, client_host, version,
                             reply, now, out);
      } else {
        const bool first = g.members.empty() && g.state == impl::phase::empty;
        const bool newcomer = req.member_id.empty();
        auto id = newcomer ? impl_->new_member_id(client_id, now) : req.member_id;
        auto& m = g.members[id];
        m.id = id;
        if (newcomer && req.group_instance_id) {  // a new static member
          m.instance_id = req.group_instance_id;
          g.statics[*req.group_instance_id] = id;
        }
        impl::refresh(m, req, client_id, client_host, version, now);
        if (m.join) {  // a second join of the same member replaces the first
          kafka::join_group_response r;
          r.error_code = ec::rebalance_in_progress;
          out.push_back([f = std::move(m.join), r] { f(r); });
        }
        m.join = reply;
        g.protocol_type = req.protocol_type;
        // A known member rejoining a Stable group with the same protocols
        // would in Kafka get the current generation back; here every join
        // opens a rebalance round (clients handle both).
        impl_->prepare(g, now, out);
        // Kafka's InitialDelayedJoin: the first member of an Empty group
        // waits group.initial.rebalance.delay.ms for others, and each
        // newcomer in that time extends the wait by as much, up to the
        // first member's rebalance timeout; so a group's members start
        // together instead of the first taking every partition and
        // giving most of them back at once.
        if (first && impl_->initial_delay.count() > 0) {
          g.initial_until = now + impl_->initial_delay;
          g.initial_limit = now + m.rebalance;
        } else if (newcomer && g.initial_until) {
          g.initial_until = std::min(now + impl_->initial_delay, g.initial_limit);
        }
        impl_->maybe_complete(g, false, now, out);
      }
    }
  }
  run(out);
}

void kafka_group_table::sync(const kafka::sync_group_request& req,
                             std::function<void(kafka::sync_group_response)> reply) {
  impl::actions out;
  {
    std::lock_guard<std::mutex> lock{impl_->mtx};
    auto answer = [&](int16_t code, std::string assignment = {}) {
      kafka::sync_group_response r;
      r.error_code = code;
      r.assignment = std::move(assignment);
      out.push_back([reply, r] { reply(r); });
    };
    auto git = impl_->groups.find(req.group_id);
    auto code = git == impl_->groups.end() ? ec::unknown_member_id
                                            : impl::validate(git->second, req.member_id, req.group_instance_id);
    if (code != 0) {
      answer(code);
    } else {
      auto& g = git->second;
      auto& m = g.members[req.member_id];
      m.seen = clock::now();
      if (req.generation_id != g.generation)
        answer(ec::illegal_generation);
      else if (g.state == impl::phase::preparing)
        answer(ec::rebalance_in_progress);
      else if (g.state == impl::phase::stable)
        answer(0, m.assignment);
      else {  // completing
        m.sync = reply;
        if (req.member_id == g.leader) {
          for (const auto& a : req.assignments)
            if (auto it = g.members.find(a.member_id); it != g.members.end())
              it->second.assignment = a.assignment;
          g.state = impl::phase::stable;
          for (auto& [id, mm] : g.members)
            if (mm.sync) {
              kafka::sync_group_response r;
              r.assignment = mm.assignment;
              out.push_back([f = std::move(mm.sync), r] { f(r); });
              mm.sync = nullptr;
            }
        }
      }
    }
  }
  run(out);
}

int16_t kafka_group_table::heartbeat(const kafka::heartbeat_request& req) {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  auto git = impl_->groups.find(req.group_id);
  if (git == impl_->groups.end())
    return ec::unknown_member_id;
  auto& g = git->second;
  if (auto code = impl::validate(g, req.member_id, req.group_instance_id); code != 0)
    return code;
  g.members[req.member_id].seen = clock::now();
  if (req.generation_id != g.generation)
    return ec::illegal_generation;
  if (g.state == impl::phase::preparing)
    return ec::rebalance_in_progress;
  return 0;
}

int16_t kafka_group_table::leave(const std::string& group, const std::string& member,
                                 const std::optional<std::string>& instance) {
  impl::actions out;
  int16_t code = 0;
  {
    std::lock_guard<std::mutex> lock{impl_->mtx};
    auto git = impl_->groups.find(group);
    std::string who = member;
    if (git == impl_->groups.end()) {
      code = ec::unknown_member_id;
    } else if (member.empty() && instance) {
      // Kafka's administrative removal by group instance id (LeaveGroup v3+).
      auto s = git->second.statics.find(*instance);
      if (s == git->second.statics.end())
        code = ec::unknown_member_id;
      else
        who = s->second;
    } else {
      code = impl::validate(git->second, member, instance);
    }
    if (code == 0)
      impl_->remove(git->second, who, clock::now(), out);
  }
  run(out);
  return code;
}

int16_t kafka_group_table::check_commit(const std::string& group, const std::string& member,
                                        const std::optional<std::string>& instance, int32_t generation) {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  if (member.empty() && !instance && generation < 0)
    return 0;
  auto git = impl_->groups.find(group);
  if (git == impl_->groups.end())
    return ec::unknown_member_id;
  if (auto code = impl::validate(git->second, member, instance); code != 0)
    return code;
  if (generation != git->second.generation)
    return ec::illegal_generation;
  // As Kafka's GroupCoordinator: members of the current generation may
  // commit while the group prepares a rebalance (before they rejoin), not
  // while it waits for the leader's assignments.
  if (git->second.state == impl::phase::completing)
    return ec::rebalance_in_progress;
  return 0;
}

void kafka_group_table::tick(clock::time_point now) {
  impl::actions out;
  {
    std::lock_guard<std::mutex> lock{impl_->mtx};
    for (auto& [gid, g] : impl_->groups) {
      std::vector<std::string> expired;
      for (auto& [id, m] : g.members)
        if (!m.join && !m.sync && now - m.seen > m.session)
          expired.push_back(id);
      for (const auto& id : expired)
        impl_->remove(g, id, now, out);
      if (g.state == impl::phase::preparing && now >= g.deadline)
        impl_->maybe_complete(g, true, now, out);
      else if (g.state == impl::phase::preparing && g.initial_until && now >= *g.initial_until)
        impl_->maybe_complete(g, false, now, out);
    }
  }
  run(out);
}

std::string kafka_group_table::describe() const {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  json list = json::array();
  for (const auto& [id, g] : impl_->groups)
    list.push_back(json{{"id", id},
                        {"state", impl::name(g.state)},
                        {"generation", g.generation},
                        {"protocol", g.protocol},
                        {"leader", g.leader},
                        {"members", g.members.size()}});
  // Client and member ids are a client's bytes: invalid UTF-8 becomes U+FFFD.
  return json{{"groups", list}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<kafka::listed_group> kafka_group_table::list() const {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  std::vector<kafka::listed_group> out;
  for (const auto& [id, g] : impl_->groups)
    out.push_back({id, g.protocol_type});
  return out;
}

kafka::described_group kafka_group_table::describe_group(const std::string& id) const {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  kafka::described_group out;
  out.group_id = id;
  auto it = impl_->groups.find(id);
  if (it == impl_->groups.end()) {
    out.group_state = "Dead";  // Kafka's answer for a group it does not know
    return out;
  }
  const auto& g = it->second;
  out.group_state = impl::name(g.state);
  out.protocol_type = g.protocol_type;
  // As Kafka's GroupMetadata.summary: the protocol, each member's metadata
  // for it and its assignment only while Stable.
  const bool stable = g.state == impl::phase::stable;
  if (stable)
    out.protocol_data = g.protocol;
  for (const auto& [mid, m] : g.members) {
    kafka::described_group_member d;
    d.member_id = mid;
    d.group_instance_id = m.instance_id;
    d.client_id = m.client_id;
    d.client_host = m.client_host;
    if (stable) {
      for (const auto& p : m.protocols)
        if (p.name == g.protocol)
          d.member_metadata = p.metadata;
      d.member_assignment = m.assignment;
    }
    out.members.push_back(std::move(d));
  }
  return out;
}

kafka_group_table::subscription kafka_group_table::subscribed(const std::string& group) const {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  subscription out;
  auto it = impl_->groups.find(group);
  if (it == impl_->groups.end())
    return out;
  out.exists = true;
  out.has_members = !it->second.members.empty();
  out.consumer = it->second.protocol_type.empty() || it->second.protocol_type == "consumer";
  for (const auto& [id, m] : it->second.members)
    for (const auto& p : m.protocols) {
      kafka::reader r{p.metadata};
      int16_t version = 0;
      std::vector<std::string> topics;
      if (r.i16(version) && r.array(topics, [&](std::string& t) { return r.string(t); }))
        out.topics.insert(topics.begin(), topics.end());
    }
  return out;
}

int16_t kafka_group_table::remove_if_empty(const std::string& group, bool& existed) {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  auto it = impl_->groups.find(group);
  existed = it != impl_->groups.end();
  if (!existed)
    return 0;
  if (!it->second.members.empty())
    return ec::non_empty_group;
  impl_->groups.erase(it);
  return 0;
}

}  // namespace moonmq::transport
