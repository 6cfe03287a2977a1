#include "api/metrics_scrape.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/ask.hpp"
#include "actors/direct_append.hpp"
#include "cluster/move_journal.hpp"
#include "util/fan_in.hpp"
#include "util/logging.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;
using metrics::labels;
using metrics::sample_family;

constexpr cluster::move_state all_move_states[] = {
  cluster::move_state::queued,       cluster::move_state::copying, cluster::move_state::cutover,
  cluster::move_state::draining,     cluster::move_state::offsets, cluster::move_state::rolling_back,
  cluster::move_state::done,         cluster::move_state::failed,  cluster::move_state::cancelled};

void add_partition_families(const scrape_input& in, std::vector<sample_family>& out) {
  sample_family start{"moonmq_partition_log_start_offset",
                      "First offset of the log of each partition this broker owns", "gauge", {}};
  sample_family end{"moonmq_partition_log_end_offset",
                    "Next offset to be written in each partition this broker owns", "gauge", {}};
  sample_family size{"moonmq_partition_size_bytes",
                     "Bytes of the segment and index files of each partition this broker owns", "gauge", {}};
  for (const auto& p : in.partitions) {
    labels l{{"topic", p.topic}, {"partition", std::to_string(p.partition)}};
    start.samples.emplace_back(l, static_cast<double>(p.log_start));
    end.samples.emplace_back(l, static_cast<double>(p.log_end));
    size.samples.emplace_back(std::move(l), static_cast<double>(p.size_bytes));
  }
  out.push_back(std::move(start));
  out.push_back(std::move(end));
  out.push_back(std::move(size));
}

void add_group_families(const std::vector<committed_offset>& committed,
                        const std::vector<owned_partition_stats>& partitions, std::vector<sample_family>& out) {
  std::map<std::pair<std::string, int32_t>, int64_t> log_end;
  for (const auto& p : partitions)
    log_end[{p.topic, p.partition}] = p.log_end;
  sample_family lag{"moonmq_group_lag",
                    "Records of a partition this broker owns after the group's committed offset (log end - committed, "
                    "never below 0)",
                    "gauge", {}};
  sample_family sum{"moonmq_group_total_lag",
                    "Sum of moonmq_group_lag over the partitions this broker owns, per group", "gauge", {}};
  std::map<std::string, double> totals;
  for (const auto& c : committed) {
    auto it = log_end.find({c.topic, c.partition});
    if (it == log_end.end())
      continue;  // not owned here (or offline): its owner reports it
    auto value = static_cast<double>(std::max<int64_t>(0, it->second - c.offset));
    lag.samples.emplace_back(labels{{"group", c.group}, {"topic", c.topic}, {"partition", std::to_string(c.partition)}},
                             value);
    totals[c.group] += value;
  }
  for (const auto& [group, total] : totals)
    sum.samples.emplace_back(labels{{"group", group}}, total);
  out.push_back(std::move(lag));
  out.push_back(std::move(sum));
}

void add_move_families(const std::vector<std::string>& states, std::vector<sample_family>& out) {
  std::map<std::string, double> count;
  for (auto s : all_move_states)
    count[cluster::to_string(s)] = 0;
  double running = 0;
  for (const auto& name : states) {
    auto s = cluster::parse_move_state(name);
    if (!s)
      continue;  // not a state this build knows
    count[name] += 1;
    if (!cluster::is_terminal(*s))
      running += 1;
  }
  sample_family by_state{"moonmq_reassignments",
                         "Moves in this broker's journal (moves it runs as source) by state; terminal rows are kept 24 h",
                         "gauge", {}};
  for (auto s : all_move_states)
    by_state.samples.emplace_back(labels{{"state", cluster::to_string(s)}}, count[cluster::to_string(s)]);
  out.push_back(std::move(by_state));
  out.push_back({"moonmq_reassignments_in_progress",
                 "Moves in this broker's journal that have not ended (neither done, failed nor cancelled)", "gauge",
                 {{labels{}, running}}});
}

void add_broker_families(const broker_census& census, std::vector<sample_family>& out) {
  static const broker_standing none;
  const auto& s = census.standing ? *census.standing : none;
  double active = 0, draining = 0, removed = 0, fenced = 0;
  for (const auto& id : census.members) {
    if (s.removed.count(id)) {
      ++removed;
      continue;
    }
    if (s.draining.count(id))
      ++draining;
    else
      ++active;
    if (s.fenced.count(id))
      ++fenced;
  }
  out.push_back({"moonmq_brokers",
                 "Brokers of the cluster by standing in this broker's metadata image (the same on every broker)",
                 "gauge",
                 {{labels{{"state", "active"}}, active},
                  {labels{{"state", "draining"}}, draining},
                  {labels{{"state", "removed"}}, removed}}});
  out.push_back({"moonmq_fenced_brokers",
                 "Brokers the metadata log has fenced (silent for SessionTimeoutMs), removed ones left out", "gauge",
                 {{labels{}, fenced}}});
}

/// One scrape in the making: the loads, the committed offsets and the
/// journal, gathered in parallel.
using scrape_round = util::fan_in<scrape_input>;

std::vector<committed_offset> parse_committed(const std::string& text) {
  std::vector<committed_offset> out;
  auto rows = json::parse(text, nullptr, false);
  if (!rows.is_array())
    return out;
  for (const auto& r : rows)
    if (r.is_object())
      out.push_back({r.value("group", std::string{}), r.value("topic", std::string{}), r.value("partition", 0),
                     r.value("offset", int64_t{0})});
  return out;
}

std::vector<std::string> parse_move_states(const std::string& text) {
  std::vector<std::string> out;
  auto rows = json::parse(text, nullptr, false);
  if (rows.is_array())
    for (const auto& r : rows)
      if (r.is_object())
        out.push_back(r.value("state", std::string{}));
  return out;
}

/// Asks `dest` (when there is one) for a JSON text with `msg` and files
/// what `store` makes of it; an error or a timeout leaves the part out.
template <class Handle, class Atom>
void ask_part(const scrape_context& ctx, const std::optional<Handle>& dest, Atom msg, const char* part,
              std::shared_ptr<scrape_round> round, std::function<void(scrape_input&, const std::string&)> store) {
  if (!dest) {
    round->add([](scrape_input&) {});
    return;
  }
  ask<std::string>(
    *ctx.system, *dest, ctx.timeout,
    [round, store](std::string& text) { round->add([&](scrape_input& in) { store(in, text); }); },
    [round, part](const caf::error& e) {
      log::get("transport")->warn("metrics.unanswered part={} error=\"{}\"", part, caf::to_string(e));
      round->add([](scrape_input&) {});
    },
    msg);
}

}  // namespace

std::vector<sample_family> scrape_families(const scrape_input& in) {
  std::vector<sample_family> out;
  add_partition_families(in, out);
  if (in.committed)
    add_group_families(*in.committed, in.partitions, out);
  if (in.move_states)
    add_move_families(*in.move_states, out);
  if (in.brokers)
    add_broker_families(*in.brokers, out);
  return out;
}

void collect_scrape_metrics(const scrape_context& ctx, std::function<void(std::string)> done) {
  scrape_input start;
  if (ctx.owners)
    start.brokers = broker_census{ctx.owners->members(), ctx.owners->standing()};
  auto round = scrape_round::make(3, std::move(start), [done = std::move(done)](scrape_input& all) {
    done(metrics::render_families(scrape_families(all)));
  });
  // The partitions this broker owns: every local one without a metadata
  // image, else those the image names this broker owner of.
  auto topics = ctx.catalog ? ctx.catalog->get() : std::make_shared<const topic_map>();
  auto owners = ctx.owners ? ctx.owners->get() : nullptr;
  std::vector<partition_actor> actors;
  std::vector<owned_partition_stats> rows;
  for (const auto& [name, t] : *topics)
    for (size_t p = 0; p < t.partitions.size(); ++p) {
      cluster::topic_partition tp{name, static_cast<int32_t>(p)};
      if (owners) {
        auto it = owners->find(tp);
        if (it == owners->end() || it->second != ctx.broker_id)
          continue;
      }
      actors.push_back(t.partitions[p]);
      rows.push_back({name, tp.partition, 0, 0, 0});
    }
  read_loads(*ctx.system, actors, ctx.timeout,
             [round, rows = std::move(rows)](std::vector<partition_load>& loads) mutable {
               round->add([&](scrape_input& in) {
                 for (size_t i = 0; i < loads.size() && i < rows.size(); ++i) {
                   if (!loads[i].error.empty())
                     continue;  // offline: counted by moonmq_offline_partitions instead
                   rows[i].log_start = loads[i].log_start;
                   rows[i].log_end = loads[i].log_end;
                   rows[i].size_bytes = loads[i].size_bytes;
                   in.partitions.push_back(std::move(rows[i]));
                 }
               });
             });
  ask_part(ctx, ctx.groups, offsets_atom::value, "groups", round,
           [](scrape_input& in, const std::string& text) { in.committed = parse_committed(text); });
  ask_part(ctx, ctx.reassigner, list_atom::value, "moves", round,
           [](scrape_input& in, const std::string& text) { in.move_states = parse_move_states(text); });
}

}  // namespace moonmq::transport
