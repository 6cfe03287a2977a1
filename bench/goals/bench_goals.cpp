// Planner benchmark: seeded random clusters, full plan (no action cap).
//
//   bench_goals [BROKERSxPARTITIONS ...] [--json] [--write-models DIR] [--seed N]
//   default: 20x100000 200x1000000
//
// Placement: every partition on a random broker among the first three
// quarters of the brokers (the last quarter joined empty); loads uniform in
// 0–1 MiB/s for nw_in and nw_out and 0–1 GiB for disk; 1000 partitions per
// topic; all seven built-in goals with their defaults. Prints, per size:
// freeze (model -> snapshot) time, planning time, actions, balancedness,
// the count goal's lower bound on moves and the plan's ratio to it, and the
// process peak RSS so far. --json also times model_to_json and reading the
// text back two ways in the same run: the nlohmann DOM reader
// (json::parse + model_from_json, the reader before simdjson) and
// model_from_text (simdjson On-Demand), with their ratio; both must give the
// same model. --write-models DIR writes each model as DIR/model-BxP.json
// (e.g. for `/usr/bin/time -v moonmq-plan --model ...`).
// Targets (docs/balancer.md): 20x100k plan ≤ 0.3 s, 200x1M ≤ 10 s (Release).

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
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

cluster_model make_model(std::size_t brokers, std::size_t partitions, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> rate(0.0, 1048576.0), size(0.0, 1073741824.0);
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
    r.owner = m.brokers[owner(rng)].id;
    r.load = {rate(rng), rate(rng), size(rng)};
  }
  m.max_actions = partitions;
  return m;
}

/// Same brokers and partitions, field by field (the parts a large model has).
bool same_model(const cluster_model& a, const cluster_model& b) {
  if (a.brokers.size() != b.brokers.size() || a.replicas.size() != b.replicas.size()) return false;
  for (std::size_t i = 0; i < a.brokers.size(); ++i)
    if (a.brokers[i].id != b.brokers[i].id || a.brokers[i].capacity != b.brokers[i].capacity) return false;
  for (std::size_t i = 0; i < a.replicas.size(); ++i) {
    const auto &x = a.replicas[i], &y = b.replicas[i];
    if (x.topic != y.topic || x.partition != y.partition || x.owner != y.owner || x.load != y.load) return false;
  }
  return true;
}

/// Processor time (user + system) of this process, seconds: unlike wall
/// time, it does not grow when other processes share the cores.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// Wall and processor seconds of one call of `f`, printed as "W s wall, C s cpu".
struct timed {
  double wall = 0.0, cpu = 0.0;
  template <class F>
  explicit timed(F&& f) {
    const auto w0 = clock_type::now();
    const double c0 = cpu_seconds();
    f();
    cpu = cpu_seconds() - c0;
    wall = seconds_since(w0);
  }
};

/// Reads `text` with the nlohmann DOM reader (json::parse +
/// model_from_json), then with model_from_text from a buffer with
/// kModelTextPadding bytes after the text (as moonmq-plan reads a file) and
/// from the bare text (which it copies first); twice, since the first round
/// pays for fresh memory pages (as a one-shot moonmq-plan does) and the
/// second reuses the allocator's. Prints the times (each includes
/// validate()) and the ratios; exits 1 if the models differ.
void compare_readers(const std::string& text) {
  const std::string padded = text + std::string(kModelTextPadding, ' ');
  for (int round = 1; round <= 2; ++round) {
    std::optional<outcome<cluster_model>> dom, fast, copied;
    const timed dom_t([&] { dom = model_from_json(nlohmann::json::parse(text)); });
    const timed fast_t(
      [&] { fast = model_from_text(std::string_view(padded.data(), text.size()), kModelTextPadding); });
    const timed copied_t([&] { copied = model_from_text(text); });
    const bool same = dom->ok() && fast->ok() && copied->ok() && same_model(dom->value(), fast->value()) &&
                      same_model(dom->value(), copied->value());
    std::printf("  read round %d, nlohmann DOM:                    %6.3f s wall %6.3f s cpu\n", round, dom_t.wall,
                dom_t.cpu);
    std::printf("  read round %d, model_from_text (padded buffer): %6.3f s wall %6.3f s cpu: %.1fx faster (wall), "
                "%.1fx (cpu)\n",
                round, fast_t.wall, fast_t.cpu, dom_t.wall / fast_t.wall, dom_t.cpu / fast_t.cpu);
    std::printf("  read round %d, model_from_text (copies text):   %6.3f s wall %6.3f s cpu: %.1fx faster (wall), "
                "%.1fx (cpu)\n",
                round, copied_t.wall, copied_t.cpu, dom_t.wall / copied_t.wall, dom_t.cpu / copied_t.cpu);
    if (!same) {
      std::printf("  MODELS DIFFER\n");
      std::exit(1);
    }
  }
  std::printf("  same model from every reader\n");
}

void run(std::size_t brokers, std::size_t partitions, std::uint64_t seed, bool with_json,
         const std::string& write_dir) {
  const auto goals = make_builtin_goals();
  std::vector<const goal*> ptrs;
  for (const auto& g : goals) ptrs.push_back(g.get());
  cluster_model model = make_model(brokers, partitions, seed);

  if (with_json || !write_dir.empty()) {
    auto t0 = clock_type::now();
    const std::string text = model_to_json(model).dump();
    const double dump_s = seconds_since(t0);
    std::printf("%zux%zu json: %.1f MiB, dump %.3f s\n", brokers, partitions,
                static_cast<double>(text.size()) / 1048576.0, dump_s);
    if (!write_dir.empty()) {
      const std::string path = write_dir + "/model-" + std::to_string(brokers) + "x" + std::to_string(partitions) + ".json";
      std::ofstream(path, std::ios::binary) << text;
      std::printf("  wrote %s\n", path.c_str());
    }
    if (with_json) compare_readers(text);
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
  for (const auto& g : p.goals)
    std::printf("  %-16s accepted %zu rejected %zu violators %zu -> %zu\n", g.name.c_str(), g.accepted, g.rejected,
                g.before.violators.size(), g.after.violators.size());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::size_t, std::size_t>> sizes;
  bool with_json = false;
  std::string write_dir;
  std::uint64_t seed = 42;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      with_json = true;
    } else if (a == "--write-models" && i + 1 < argc) {
      write_dir = argv[++i];
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (auto x = a.find('x'); x != std::string::npos) {
      sizes.emplace_back(std::strtoull(a.substr(0, x).c_str(), nullptr, 10),
                         std::strtoull(a.substr(x + 1).c_str(), nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: bench_goals [BROKERSxPARTITIONS ...] [--json] [--write-models DIR] [--seed N]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {{20, 100000}, {200, 1000000}};
  for (const auto& [b, p] : sizes) run(b, p, seed, with_json, write_dir);
  return 0;
}
