#include "placement/scorer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

namespace moonmq::placement {
namespace {

using json = nlohmann::json;

std::string num(double v, int precision = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string rate(double bytes_per_sec) {
  if (bytes_per_sec >= 1024.0 * 1024.0)
    return num(bytes_per_sec / (1024.0 * 1024.0), 2) + " MiB/s";
  if (bytes_per_sec >= 1024.0)
    return num(bytes_per_sec / 1024.0, 1) + " KiB/s";
  return num(bytes_per_sec, 0) + " B/s";
}

field_error fail(std::string field, std::string message) {
  return field_error{std::move(field), std::move(message)};
}

bool finite_at_least(double v, double lo) {
  return std::isfinite(v) && v >= lo;
}

/// FNV-1a 64 of "client\nbroker": the rendezvous weight of a broker for a client.
uint64_t rendezvous(const std::string& client, const std::string& broker) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (char c : client)
    mix(static_cast<unsigned char>(c));
  mix('\n');
  for (char c : broker)
    mix(static_cast<unsigned char>(c));
  return h;
}

double cpu_of(const load_report& r, cpu_source s) {
  switch (s) {
    case cpu_source::process: return r.process_cpu;
    case cpu_source::machine: return r.machine_cpu;
    case cpu_source::higher: return std::max(r.process_cpu, r.machine_cpu);
  }
  return std::max(r.process_cpu, r.machine_cpu);
}

/// Milliseconds from `seen_ms` to `now_ms`, 0 when seen is in the future.
uint64_t age_ms(int64_t seen_ms, int64_t now_ms) {
  if (now_ms <= seen_ms)
    return 0;
  return static_cast<uint64_t>(now_ms) - static_cast<uint64_t>(seen_ms);  // exact: the true difference is < 2^64
}

/// The first reason a broker is not ranked, or nullopt.
std::optional<exclusion> exclude(const broker_load& b, int64_t now_ms, const scorer_config& c) {
  auto out = [&b](exclusion_reason r, std::string detail) { return exclusion{b.report.broker, r, std::move(detail)}; };
  if (auto ok = validate(b.report); !ok)
    return out(exclusion_reason::invalid_report, to_string(ok.err()));
  if (!b.alive)
    return out(exclusion_reason::dead, "unreachable: its last call failed");
  if (b.report.draining)
    return out(exclusion_reason::draining, "the broker reports draining");
  // Bounded by validate(config): ≤ 1000 · 86 400 000, no overflow.
  auto limit = static_cast<uint64_t>(c.stale_after_heartbeats * c.heartbeat_interval_ms);
  if (auto age = age_ms(b.seen_ms, now_ms); age > limit)
    return out(exclusion_reason::stale, "no new report for " + std::to_string(age) + " ms (limit " +
                                            std::to_string(c.stale_after_heartbeats) + " heartbeats of " +
                                            std::to_string(c.heartbeat_interval_ms) + " ms)");
  return std::nullopt;
}

struct ranked_entry {
  candidate cand;
  int64_t spread_key = 0;
  uint64_t hash = 0;
};

}  // namespace

const char* to_string(cpu_source s) {
  switch (s) {
    case cpu_source::process: return "process";
    case cpu_source::machine: return "machine";
    case cpu_source::higher: return "higher";
  }
  return "higher";
}

std::optional<cpu_source> parse_cpu_source(std::string_view s) {
  if (s == "process")
    return cpu_source::process;
  if (s == "machine")
    return cpu_source::machine;
  if (s == "higher")
    return cpu_source::higher;
  return std::nullopt;
}

const char* to_string(exclusion_reason r) {
  switch (r) {
    case exclusion_reason::dead: return "dead";
    case exclusion_reason::draining: return "draining";
    case exclusion_reason::stale: return "stale";
    case exclusion_reason::invalid_report: return "invalid_report";
    case exclusion_reason::duplicate_broker: return "duplicate_broker";
  }
  return "unknown";
}

const char* to_string(verdict v) {
  return v == verdict::recommended ? "recommended" : "no_eligible_broker";
}

status validate(const scorer_config& c) {
  const char* weight = "expected a finite number >= 0";
  if (!finite_at_least(c.session_weight, 0))
    return fail("session_weight", weight);
  if (!finite_at_least(c.byte_rate_weight, 0))
    return fail("byte_rate_weight", weight);
  if (!finite_at_least(c.cpu_weight, 0))
    return fail("cpu_weight", weight);
  if (!finite_at_least(c.partition_weight, 0))
    return fail("partition_weight", weight);
  if (!std::isfinite(c.session_floor) || c.session_floor <= 0)
    return fail("session_floor", "expected a finite number > 0");
  if (!std::isfinite(c.byte_rate_floor) || c.byte_rate_floor <= 0)
    return fail("byte_rate_floor", "expected a finite number > 0");
  if (!std::isfinite(c.overload_cpu) || c.overload_cpu <= 0 || c.overload_cpu > 1)
    return fail("overload_cpu", "expected a number in (0, 1]");
  if (!std::isfinite(c.overload_inflow_bytes_per_sec) || c.overload_inflow_bytes_per_sec <= 0)
    return fail("overload_inflow_bytes_per_sec", "expected a finite number > 0");
  if (c.heartbeat_interval_ms < 1 || c.heartbeat_interval_ms > 86'400'000)
    return fail("heartbeat_interval_ms", "expected an integer in [1, 86400000]");
  if (c.stale_after_heartbeats < 1 || c.stale_after_heartbeats > 1000)
    return fail("stale_after_heartbeats", "expected an integer in [1, 1000]");
  if (!finite_at_least(c.tie_band, 0))
    return fail("tie_band", "expected a finite number >= 0");
  return {};
}

result<recommendation> recommend(const std::vector<broker_load>& brokers, int64_t now_ms, const placement_request& req,
                                 const scorer_config& c, const std::vector<broker_id>& partition_owners) {
  if (auto ok = validate(c); !ok)
    return ok.err();
  if (!valid_client_id(req.client_id))
    return fail("clientId", "expected 1..256 bytes without control characters");
  if (req.topic && !cluster::valid_topic(*req.topic))
    return fail("topic", "expected [A-Za-z0-9._-]{1,249} without \"..\", got " + cluster::quote_input(*req.topic));

  recommendation rec;

  // Duplicate ids (a caller bug): keep the freshest entry, exclude the rest.
  std::map<broker_id, size_t> keep;
  for (size_t i = 0; i < brokers.size(); ++i) {
    auto [it, fresh] = keep.emplace(brokers[i].report.broker, i);
    if (!fresh && brokers[i].seen_ms > brokers[it->second].seen_ms)
      it->second = i;
  }
  std::vector<const broker_load*> eligible;
  for (size_t i = 0; i < brokers.size(); ++i) {
    const auto& b = brokers[i];
    if (keep.at(b.report.broker) != i) {
      rec.excluded.push_back({b.report.broker, exclusion_reason::duplicate_broker, "another entry for this broker was kept (the freshest, else the first)"});
      continue;
    }
    if (auto ex = exclude(b, now_ms, c)) {
      rec.excluded.push_back(std::move(*ex));
      continue;
    }
    eligible.push_back(&b);
  }
  if (eligible.empty())
    return rec;  // no_eligible_broker

  // Normalization over the ranked brokers (docs/placement.md): each term is
  // value / max(highest value, floor). Floors are > 0: never 0/0.
  double max_sessions = 0;
  double max_rate = 0;
  for (const auto* b : eligible) {
    max_sessions = std::max(max_sessions, static_cast<double>(b->report.active_sessions));
    if (!b->counters_reset)
      max_rate = std::max(max_rate, b->report.byte_rate());
  }
  rec.session_scale = std::max(max_sessions, c.session_floor);
  rec.byte_rate_scale = std::max(max_rate, c.byte_rate_floor);

  std::map<broker_id, int64_t> owned;
  for (const auto& o : partition_owners)
    ++owned[o];
  const bool with_topic = req.topic.has_value() && !partition_owners.empty();
  rec.topic_partitions = with_topic ? static_cast<int64_t>(partition_owners.size()) : 0;

  std::vector<ranked_entry> entries;
  for (const auto* b : eligible) {
    const load_report& r = b->report;
    ranked_entry e;
    candidate& k = e.cand;
    k.broker = r.broker;
    k.rates_trusted = !b->counters_reset;
    auto& why = k.reasons;

    k.terms.sessions = static_cast<double>(r.active_sessions) / rec.session_scale;
    why.push_back("sessions " + std::to_string(r.active_sessions) + " / " + num(rec.session_scale, 0) + " = " +
                  num(k.terms.sessions) + ", x w1 " + num(c.session_weight, 2));
    if (k.rates_trusted) {
      k.terms.byte_rate = r.byte_rate() / rec.byte_rate_scale;
      why.push_back("byte rate " + rate(r.byte_rate()) + " (in+out) / " + rate(rec.byte_rate_scale) + " = " +
                    num(k.terms.byte_rate) + ", x w2 " + num(c.byte_rate_weight, 2));
    } else {
      k.terms.byte_rate = 1.0;
      why.push_back("counters went backwards (restart): its rates are not trusted, byte-rate term counted as the "
                    "maximum 1.000, x w2 " + num(c.byte_rate_weight, 2));
    }
    double cpu = cpu_of(r, c.cpu);
    k.terms.cpu = cpu;
    why.push_back("cpu " + num(cpu, 2) + " (" + to_string(c.cpu) + " of process " + num(r.process_cpu, 2) +
                  ", machine " + num(r.machine_cpu, 2) + "), x w3 " + num(c.cpu_weight, 2));
    if (with_topic) {
      auto it = owned.find(r.broker);
      k.owned_partitions = it == owned.end() ? 0 : it->second;
      double share = static_cast<double>(k.owned_partitions) / static_cast<double>(partition_owners.size());
      k.terms.partitions = 1.0 - share;
      why.push_back("owns " + std::to_string(k.owned_partitions) + " of " + std::to_string(partition_owners.size()) +
                    " partitions of " + *req.topic + ": 1 - " + num(share) + " = " + num(k.terms.partitions) +
                    ", x w4 " + num(c.partition_weight, 2));
    } else if (req.topic) {
      why.push_back("topic " + *req.topic + " has no known partitions: no ownership term");
    }
    k.score = c.session_weight * k.terms.sessions + c.byte_rate_weight * k.terms.byte_rate +
              c.cpu_weight * k.terms.cpu + c.partition_weight * k.terms.partitions;
    why.push_back("score " + num(k.score, 4) + " (lower is better)");

    bool cpu_over = cpu > c.overload_cpu;
    bool inflow_over = k.rates_trusted && r.bytes_in_per_sec > c.overload_inflow_bytes_per_sec;
    k.overloaded = cpu_over || inflow_over;
    if (cpu_over)
      why.push_back("overloaded: cpu " + num(cpu, 2) + " > " + num(c.overload_cpu, 2) + ", yields to every non-overloaded broker");
    if (inflow_over)
      why.push_back("overloaded: inflow " + rate(r.bytes_in_per_sec) + " > " + rate(c.overload_inflow_bytes_per_sec) +
                    ", yields to every non-overloaded broker");

    auto ci = r.clients.find(req.client_id);
    k.client_sessions = ci == r.clients.end() ? 0 : ci->second.sessions;
    if (c.spread_clients) {
      e.spread_key = k.client_sessions;
      if (k.client_sessions > 0)
        why.push_back("client " + cluster::quote_input(req.client_id) + " already has " +
                      std::to_string(k.client_sessions) + " session(s) here: ranked after brokers with fewer of its sessions");
    }
    e.hash = rendezvous(req.client_id, r.broker.str());
    entries.push_back(std::move(e));
  }

  // Tiers, then score; broker id makes the order total.
  std::sort(entries.begin(), entries.end(), [](const ranked_entry& a, const ranked_entry& b) {
    if (a.cand.overloaded != b.cand.overloaded)
      return !a.cand.overloaded;
    if (a.spread_key != b.spread_key)
      return a.spread_key < b.spread_key;
    if (a.cand.score != b.cand.score)
      return a.cand.score < b.cand.score;
    return a.cand.broker < b.cand.broker;
  });
  // Within each tier, the brokers scoring within tie_band of the tier's best
  // are near-ties: ordered by rendezvous hash (highest first), so that
  // clients asking before the next report spread instead of all taking the
  // one lowest score.
  for (size_t begin = 0; begin < entries.size();) {
    size_t end = begin;
    while (end < entries.size() && entries[end].cand.overloaded == entries[begin].cand.overloaded &&
           entries[end].spread_key == entries[begin].spread_key)
      ++end;
    const double best = entries[begin].cand.score;
    size_t band_end = begin;
    while (band_end < end && entries[band_end].cand.score <= best + c.tie_band)
      ++band_end;
    if (band_end - begin > 1) {
      std::sort(entries.begin() + static_cast<std::ptrdiff_t>(begin), entries.begin() + static_cast<std::ptrdiff_t>(band_end),
                [](const ranked_entry& a, const ranked_entry& b) {
                  return a.hash != b.hash ? a.hash > b.hash : a.cand.broker < b.cand.broker;
                });
      for (size_t i = begin; i < band_end; ++i) {
        entries[i].cand.near_tie = true;
        entries[i].cand.reasons.push_back("within " + num(c.tie_band, 3) + " of its tier's best score " +
                                          num(best, 4) + " (" + std::to_string(band_end - begin) +
                                          " near-ties): ordered by client hash");
      }
    }
    begin = end;
  }

  rec.outcome = verdict::recommended;
  for (auto& e : entries)
    rec.ranked.push_back(std::move(e.cand));
  return rec;
}

json to_json(const recommendation& r) {
  json ranked = json::array();
  for (const auto& k : r.ranked)
    ranked.push_back({{"broker_id", k.broker.str()},
                      {"score", k.score},
                      {"overloaded", k.overloaded},
                      {"rates_trusted", k.rates_trusted},
                      {"client_sessions", k.client_sessions},
                      {"owned_partitions", k.owned_partitions},
                      {"near_tie", k.near_tie},
                      {"terms",
                       {{"sessions", k.terms.sessions},
                        {"byte_rate", k.terms.byte_rate},
                        {"cpu", k.terms.cpu},
                        {"partitions", k.terms.partitions}}},
                      {"reasons", k.reasons}});
  json excluded = json::array();
  for (const auto& x : r.excluded)
    excluded.push_back({{"broker_id", x.broker.str()}, {"reason", to_string(x.reason)}, {"detail", x.detail}});
  json out{{"outcome", to_string(r.outcome)},
           {"session_scale", r.session_scale},
           {"byte_rate_scale", r.byte_rate_scale},
           {"ranked", std::move(ranked)},
           {"excluded", std::move(excluded)}};
  if (r.topic_partitions > 0)
    out["topic_partitions"] = r.topic_partitions;
  return out;
}

}  // namespace moonmq::placement
