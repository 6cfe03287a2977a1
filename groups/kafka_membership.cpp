#include "groups/kafka_membership.hpp"

#include <algorithm>

#include "kafka/wire.hpp"

namespace moonmq::groups {

namespace ec = kafka::error_code;
using json = nlohmann::json;

const char* kafka_membership::name(phase p) {
  switch (p) {
    case phase::empty: return "Empty";
    case phase::preparing: return "PreparingRebalance";
    case phase::completing: return "CompletingRebalance";
    default: return "Stable";
  }
}

/// Forgets the member at `it` (and its instance id); the next member.
std::map<std::string, kafka_membership::member>::iterator kafka_membership::erase(group& g, std::map<std::string, member>::iterator it) {
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
int16_t kafka_membership::validate(const group& g, const std::string& member, const std::optional<std::string>& instance) {
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
void kafka_membership::prepare(group& g, int64_t now, actions& out) {
  if (g.state != phase::preparing) {
    int64_t longest = 0;
    for (auto& [id, m] : g.members)
      longest = std::max(longest, m.rebalance_ms);
    g.deadline_ms = now + longest;
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
void kafka_membership::maybe_complete(group& g, bool force, int64_t now, actions& out) {
  if (g.state != phase::preparing)
    return;
  if (!force && g.initial_until_ms && now < *g.initial_until_ms)
    return;  // the first round still waits for more members
  bool all = std::all_of(g.members.begin(), g.members.end(), [](auto& kv) { return bool(kv.second.join); });
  if (!all && !force)
    return;
  g.initial_until_ms.reset();
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
    m.seen_ms = now;
    m.assignment.clear();
    out.push_back([f = std::move(m.join), r] { f(r); });
    m.join = nullptr;
  }
}

/// A JoinGroup's member id for a member joining without one.
std::string kafka_membership::new_member_id(const std::string& client_id, int64_t now) {
  return (client_id.empty() ? std::string("member") : client_id) + "-" + std::to_string(++next_member_) + "-"
         + std::to_string(now % 1000000007);
}

/// What every accepted JoinGroup records of its member.
void kafka_membership::refresh(member& m, const kafka::join_group_request& req, const std::string& client_id,
                    const std::string& client_host, int16_t version, int64_t now) {
  m.session_ms = req.session_timeout_ms;
  m.rebalance_ms = version >= 1 && req.rebalance_timeout_ms > 0 ? req.rebalance_timeout_ms : req.session_timeout_ms;
  m.protocols = req.protocols;
  m.client_id = client_id;
  m.client_host = client_host;
  m.seen_ms = now;
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
void kafka_membership::rejoin_static(group& g, const std::string& old_id, const std::string& new_id,
                   const kafka::join_group_request& req, const std::string& client_id,
                   const std::string& client_host, int16_t version,
                   join_reply reply, int64_t now, actions& out) {
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

void kafka_membership::remove(group& g, const std::string& who, int64_t now, actions& out) {
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

kafka_membership::kafka_membership(int64_t initial_rebalance_delay_ms)
  : initial_delay_ms_(std::max<int64_t>(initial_rebalance_delay_ms, 0)) {}

void kafka_membership::join(const kafka::join_group_request& req, const std::string& client_id, int16_t version,
                            const std::string& client_host, join_reply reply, int64_t now, actions& out) {
  {
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
      const bool fresh = groups_.count(req.group_id) == 0;
      auto& g = groups_[req.group_id];
      // A refused join leaves no trace of a group nobody had joined.
      auto refuse = [&](int16_t code) {
        fail(code);
        if (fresh)
          groups_.erase(req.group_id);
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
        code = validate(g, req.member_id, req.group_instance_id);
      if (code != 0) {
        refuse(code);
      } else if (!replaced.empty()) {
        rejoin_static(g, replaced, new_member_id(client_id, now), req, client_id, client_host, version,
                             reply, now, out);
      } else {
        const bool first = g.members.empty() && g.state == phase::empty;
        const bool newcomer = req.member_id.empty();
        auto id = newcomer ? new_member_id(client_id, now) : req.member_id;
        auto& m = g.members[id];
        m.id = id;
        if (newcomer && req.group_instance_id) {  // a new static member
          m.instance_id = req.group_instance_id;
          g.statics[*req.group_instance_id] = id;
        }
        refresh(m, req, client_id, client_host, version, now);
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
        prepare(g, now, out);
        // Kafka's InitialDelayedJoin: the first member of an Empty group
        // waits group.initial.rebalance.delay.ms for others, and each
        // newcomer in that time extends the wait by as much, up to the
        // first member's rebalance timeout; so a group's members start
        // together instead of the first taking every partition and
        // giving most of them back at once.
        if (first && initial_delay_ms_ > 0) {
          g.initial_until_ms = now + initial_delay_ms_;
          g.initial_limit_ms = now + m.rebalance_ms;
        } else if (newcomer && g.initial_until_ms) {
          g.initial_until_ms = std::min(now + initial_delay_ms_, g.initial_limit_ms);
        }
        maybe_complete(g, false, now, out);
      }
    }
  }
}

void kafka_membership::sync(const kafka::sync_group_request& req, sync_reply reply, int64_t now, actions& out) {
  {
    auto answer = [&](int16_t code, std::string assignment = {}) {
      kafka::sync_group_response r;
      r.error_code = code;
      r.assignment = std::move(assignment);
      out.push_back([reply, r] { reply(r); });
    };
    auto git = groups_.find(req.group_id);
    auto code = git == groups_.end() ? ec::unknown_member_id
                                            : validate(git->second, req.member_id, req.group_instance_id);
    if (code != 0) {
      answer(code);
    } else {
      auto& g = git->second;
      auto& m = g.members[req.member_id];
      m.seen_ms = now;
      if (req.generation_id != g.generation)
        answer(ec::illegal_generation);
      else if (g.state == phase::preparing)
        answer(ec::rebalance_in_progress);
      else if (g.state == phase::stable)
        answer(0, m.assignment);
      else {  // completing
        m.sync = reply;
        if (req.member_id == g.leader) {
          for (const auto& a : req.assignments)
            if (auto it = g.members.find(a.member_id); it != g.members.end())
              it->second.assignment = a.assignment;
          g.state = phase::stable;
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
}

int16_t kafka_membership::heartbeat(const kafka::heartbeat_request& req, int64_t now) {
  auto git = groups_.find(req.group_id);
  if (git == groups_.end())
    return ec::unknown_member_id;
  auto& g = git->second;
  if (auto code = validate(g, req.member_id, req.group_instance_id); code != 0)
    return code;
  g.members[req.member_id].seen_ms = now;
  if (req.generation_id != g.generation)
    return ec::illegal_generation;
  if (g.state == phase::preparing)
    return ec::rebalance_in_progress;
  return 0;
}

int16_t kafka_membership::leave(const std::string& group, const std::string& member,
                                const std::optional<std::string>& instance, int64_t now, actions& out) {
  int16_t code = 0;
  {
    auto git = groups_.find(group);
    std::string who = member;
    if (git == groups_.end()) {
      code = ec::unknown_member_id;
    } else if (member.empty() && instance) {
      // Kafka's administrative removal by group instance id (LeaveGroup v3+).
      auto s = git->second.statics.find(*instance);
      if (s == git->second.statics.end())
        code = ec::unknown_member_id;
      else
        who = s->second;
    } else {
      code = validate(git->second, member, instance);
    }
    if (code == 0)
      remove(git->second, who, now, out);
  }
  return code;
}

int16_t kafka_membership::check_commit(const kafka_commit_check& c) const {
  if (c.member.empty() && !c.instance && c.generation < 0)
    return 0;
  auto git = groups_.find(c.group);
  if (git == groups_.end())
    return ec::unknown_member_id;
  if (auto code = validate(git->second, c.member, c.instance); code != 0)
    return code;
  if (c.generation != git->second.generation)
    return ec::illegal_generation;
  // As Kafka's GroupCoordinator: members of the current generation may
  // commit while the group prepares a rebalance (before they rejoin), not
  // while it waits for the leader's assignments.
  if (git->second.state == phase::completing)
    return ec::rebalance_in_progress;
  return 0;
}

void kafka_membership::tick(int64_t now, actions& out) {
  {
    for (auto& [gid, g] : groups_) {
      std::vector<std::string> expired;
      for (auto& [id, m] : g.members)
        if (!m.join && !m.sync && now - m.seen_ms > m.session_ms)
          expired.push_back(id);
      for (const auto& id : expired)
        remove(g, id, now, out);
      if (g.state == phase::preparing && now >= g.deadline_ms)
        maybe_complete(g, true, now, out);
      else if (g.state == phase::preparing && g.initial_until_ms && now >= *g.initial_until_ms)
        maybe_complete(g, false, now, out);
    }
  }
}

json kafka_membership::describe() const {
  json list = json::array();
  for (const auto& [id, g] : groups_)
    list.push_back(json{{"id", id},
                        {"state", name(g.state)},
                        {"generation", g.generation},
                        {"protocol", g.protocol},
                        {"leader", g.leader},
                        {"members", g.members.size()}});
  return list;
}

std::vector<kafka::listed_group> kafka_membership::list() const {
  std::vector<kafka::listed_group> out;
  for (const auto& [id, g] : groups_)
    out.push_back({id, g.protocol_type});
  return out;
}

kafka::described_group kafka_membership::describe_group(const std::string& id) const {
  kafka::described_group out;
  out.group_id = id;
  auto it = groups_.find(id);
  if (it == groups_.end()) {
    out.group_state = "Dead";  // Kafka's answer for a group it does not know
    return out;
  }
  const auto& g = it->second;
  out.group_state = name(g.state);
  out.protocol_type = g.protocol_type;
  // As Kafka's GroupMetadata.summary: the protocol, each member's metadata
  // for it and its assignment only while Stable.
  const bool stable = g.state == phase::stable;
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

kafka_subscription kafka_membership::subscribed(const std::string& group) const {
  kafka_subscription out;
  auto it = groups_.find(group);
  if (it == groups_.end())
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

int16_t kafka_membership::remove_if_empty(const std::string& group, bool& existed) {
  auto it = groups_.find(group);
  existed = it != groups_.end();
  if (!existed)
    return 0;
  if (!it->second.members.empty())
    return ec::non_empty_group;
  groups_.erase(it);
  return 0;
}

kafka::leave_group_response kafka_membership::leave(const kafka::leave_group_request& req, int16_t version,
                                                    int64_t now, actions& out) {
  kafka::leave_group_response r;
  if (version < 3) {
    r.error_code = leave(req.group_id, req.member_id, std::nullopt, now, out);
    return r;
  }
  for (const auto& m : req.members)
    r.members.push_back({m.member_id, m.group_instance_id, leave(req.group_id, m.member_id, m.group_instance_id, now, out)});
  return r;
}

}  // namespace moonmq::groups
