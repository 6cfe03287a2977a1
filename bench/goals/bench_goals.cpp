// Planner benchmark: seeded random clusters, full plan (no action cap).
//
//   bench_goals [BROKERSxPARTITIONS ...] [--json] [--seed N] [--skew]
//   default: 20x100000 200x1000000
//
// Placement: every partition on a random broker among the first three
// quarters of the brokers (the last quarter joined empty); with --skew,
// on broker floor(B·u²) for u uniform in [0, 1) instead (owners skewed
// towards low ids: b0 gets 22% of 20 brokers' partitions, b19 2.5%, the
// shape of issue 19's measurements); loads uniform in
// 0–1 MiB/s for nw_in and nw_out and 0–1 GiB for disk; 1000 partitions per
// topic; all seven built-in goals with their defaults. Prints, per size:
// freeze (model -> snapshot) time, planning time, actions, balancedness,
// the count goal's lower bound on moves and the plan's ratio to it, and the
// process peak RSS so far. --json also times model_to_json + parse.
// Targets (docs/balancer.md): 20x100k plan ≤ 0.3 s, 200x1M ≤ 10 s (Release).

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "goals/builtin_goals.hpp"
#include "goals/detector.hpp"
#include "goals/model_json.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using namespace moonmq::goals;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
}

cluster_model make_model(std::size_t brokers, std::size_t partitions, std::uint64_t seed, bool skew) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> rate(0.0, 1048576.0), size(0.0, 1073741824.0), unit(0.0, 1.0);
  const std::size_t populated = std::max<std::size_t>(1, brokers * 3 / 4);
  std::uniform_int_distribution<std::size_t> owner(0, populated - 1);
  cluster_model m;
  m.brokers.resize(brokers);
  for (std::size_t b = 0; b < brokers; ++b) m.brokers[b].id = "b" + std::to_string(b);
  m.replicas.resize(partitions);
  for (std::size_t p = 0; p < partitions; ++p) {
    auto& r = m.replicas[p];
    r.topic = "topic-" + std::to_string(p / 1000);
    r.partition = static_cast<std::int32_t>(p % 1000);
    const double u = skew ? unit(rng) : 0.0;
    const std::size_t o = skew ? std::min(brokers - 1, static_cast<std::size_t>(static_cast<double>(brokers) * u * u))
                               : owner(rng);
    r.owner = m.brokers[o].id;
    r.load = {rate(rng), rate(rng), size(rng)};
  }
  m.max_actions = partitions;
  return m;
}

void run(std::size_t brokers, std::size_t partitions, std::uint64_t seed, bool with_json, bool skew) {
  const auto goals = make_builtin_goals();
  std::vector<const goal*> ptrs;
  for (const auto& g : goals) ptrs.push_back(g.get());
  cluster_model model = make_model(brokers, partitions, seed, skew);

  if (with_json) {
    auto t0 = clock_type::now();
    const std::string text = model_to_json(model).dump();
    const double dump_s = seconds_since(t0);
    t0 = clock_type::now();
    auto parsed = model_from_text(text);
    const double parse_s = seconds_since(t0);
    std::printf("%zux%zu json: %.1f MiB, dump %.3f s, parse+validate %.3f s (%s)\n", brokers, partitions,
                static_cast<double>(text.size()) / 1048576.0, dump_s, parse_s, parsed.ok() ? "ok" : "error");
  }

  auto t0 = clock_type::now();
  auto frozen = snapshot::freeze(model);
  const double freeze_s = seconds_since(t0);
  if (!frozen) {
    std::printf("invalid model: %s\n", frozen.error().c_str());
    std::exit(1);
  }
  std::vector<goal_binding> bound;
  for (const goal* g : ptrs) bound.push_back({g, g->default_config()});
  bound = order_goals(std::move(bound));
  t0 = clock_type::now();
  const plan p = run_detector(frozen.value(), bound, model.max_actions);
  const double plan_s = seconds_since(t0);
  std::printf("%zux%zu: model load (freeze) %.3f s, plan %.3f s, actions %zu, balancedness %.1f -> %.1f, "
              "peak RSS %.0f MiB\n",
              brokers, partitions, freeze_s, plan_s, p.actions.size(), p.balancedness_before, p.balancedness_after,
              peak_rss_mib());
  if (p.count_moves_lower_bound && *p.count_moves_lower_bound > 0)
    std::printf("  moves %zu, PARTITION_COUNT lower bound %zu, ratio %.3f\n", p.actions.size(),
                *p.count_moves_lower_bound,
                static_cast<double>(p.actions.size()) / static_cast<double>(*p.count_moves_lower_bound));
  for (const auto& g : p.goals) {
    std::printf("  %-16s accepted %zu rejected %zu violators %zu -> %zu", g.name.c_str(), g.accepted, g.rejected,
                g.before.violators.size(), g.after.violators.size());
    // How far out the brokers still outside a distribution goal's band are (× its mean).
    for (std::size_t r = 0; r < kResourceCount; ++r)
      if (g.name == resource_name(static_cast<resource>(r)) && g.after.mean > 0.0 && g.after.basis == "load")
        for (const broker_index v : g.after.violators)
          std::printf(" %s %.2fx", p.broker_ids[v.value].c_str(), p.brokers_after[v.value][r] / g.after.mean);
    std::printf("\n");
    for (std::size_t i = 0; i < g.still_outside.size() && i < 3; ++i)
      std::printf("    %s: %s\n", p.broker_ids[g.still_outside[i].broker.value].c_str(), g.still_outside[i].why.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::size_t, std::size_t>> sizes;
  bool with_json = false, skew = false;
  std::uint64_t seed = 42;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      with_json = true;
    } else if (a == "--skew") {
      skew = true;
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (auto x = a.find('x'); x != std::string::npos) {
      sizes.emplace_back(std::strtoull(a.substr(0, x).c_str(), nullptr, 10),
                         std::strtoull(a.substr(x + 1).c_str(), nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: bench_goals [BROKERSxPARTITIONS ...] [--json] [--seed N] [--skew]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {{20, 100000}, {200, 1000000}};
  for (const auto& [b, p] : sizes) run(b, p, seed, with_json, skew);
  return 0;
}
