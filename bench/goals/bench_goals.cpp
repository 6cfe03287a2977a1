// Planner benchmark: seeded random clusters, full plan (no action cap).
//
//   bench_goals [BROKERSxPARTITIONS ...] [--json] [--write-models DIR] [--seed N] [--skew] [--topic-spread]
//   default: 20x100000 200x1000000
//
// Placement: every partition on a random broker among the first three
// quarters of the brokers (the last quarter joined empty); with --skew,
// on broker floor(B·u²) for u uniform in [0, 1) instead (owners skewed
// towards low ids: b0 gets 22% of 20 brokers' partitions, b19 2.5%, the
// shape of issue 19's measurements); loads uniform in
// 0–1 MiB/s for nw_in and nw_out and 0–1 GiB for disk; 1000 partitions per
// topic; all eight built-in goals with their defaults (TOPIC_SPREAD off);
// --topic-spread plans the same model again with TOPIC_SPREAD on, in the
// same run, printing both. Prints, per size and plan:
// freeze (model -> snapshot) time, planning time, actions, balancedness,
// the count goal's lower bound on moves and the plan's ratio to it, and the
// process peak RSS so far. --json also times model_to_json and reading the
// text back two ways in the same run: the nlohmann DOM reader
// (json::parse + model_from_json, the reader before simdjson) and
// model_from_text (simdjson On-Demand), each in a fresh child process and
// twice in this one, with their ratios (wall and processor time); every
// reader must give the same model. --write-models DIR writes each model as
// DIR/model-BxP.json (e.g. for `/usr/bin/time -v moonmq-plan --model ...`).
// Targets (docs/balancer.md): 20x100k plan ≤ 0.3 s, 200x1M ≤ 10 s (Release).

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
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

/// Reads exactly `size` bytes from `fd`; false on an error or an early end.
bool read_all(int fd, void* out, std::size_t size) {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
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

/// Wall and processor seconds of one call of `f`.
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

/// Runs `read` in a forked child and returns its wall and processor time:
/// the child starts with none of the pages this process has touched, as a
/// one-shot moonmq-plan does (this process built and dumped the model, so
/// its allocator holds much faulted-in free memory that a read here would
/// reuse). Exits when the child fails or its model is invalid.
template <class Read>
timed in_child(const char* what, Read&& read) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    bool ok = false;
    timed t([&] { ok = read(); });
    const double out[2] = {t.wall, t.cpu};
    _exit(ok && write(fds[1], out, sizeof out) == static_cast<ssize_t>(sizeof out) ? 0 : 1);
  }
  close(fds[1]);
  double in[2] = {0.0, 0.0};
  const bool got = pid > 0 && read_all(fds[0], in, sizeof in);
  close(fds[0]);
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::printf("  %s failed in the child process\n", what);
    std::exit(1);
  }
  timed t([] {});
  t.wall = in[0];
  t.cpu = in[1];
  return t;
}

void print_ratio(const char* what, const timed& dom, const timed& text) {
  std::printf("  %s: nlohmann DOM %6.3f s wall %6.3f s cpu; model_from_text %6.3f s wall %6.3f s cpu: "
              "%.1fx faster (wall), %.1fx (cpu)\n",
              what, dom.wall, dom.cpu, text.wall, text.cpu, dom.wall / text.wall, dom.cpu / text.cpu);
}

/// Times the nlohmann DOM reader (json::parse + model_from_json, the reader
/// before simdjson) against model_from_text (from a buffer with
/// kModelTextPadding bytes after the text, as moonmq-plan reads a file),
/// each including validate(): first each in a fresh child process (what a
/// one-shot moonmq-plan pays, fresh pages included), then twice in this
/// process (the second round reuses the allocator's pages), where it also
/// checks that both readers, and model_from_text on the bare text (which it
/// copies first), give the same model; exits 1 if not.
void compare_readers(const std::string& text) {
  const std::string padded = text + std::string(kModelTextPadding, ' ');
  const std::string_view view(padded.data(), text.size());
  const timed dom_child =
    in_child("nlohmann DOM", [&] { return model_from_json(nlohmann::json::parse(text)).ok(); });
  const timed text_child = in_child("model_from_text", [&] { return model_from_text(view, kModelTextPadding).ok(); });
  print_ratio("read, fresh process", dom_child, text_child);
  for (int round = 1; round <= 2; ++round) {
    std::optional<outcome<cluster_model>> dom, fast, copied;
    const timed dom_t([&] { dom = model_from_json(nlohmann::json::parse(text)); });
    const timed fast_t([&] { fast = model_from_text(view, kModelTextPadding); });
    const timed copied_t([&] { copied = model_from_text(text); });
    const std::string what = "read, this process, round " + std::to_string(round);
    print_ratio(what.c_str(), dom_t, fast_t);
    print_ratio((what + ", copying the text").c_str(), dom_t, copied_t);
    if (!dom->ok() || !fast->ok() || !copied->ok() || !same_model(dom->value(), fast->value()) ||
        !same_model(dom->value(), copied->value())) {
      std::printf("  MODELS DIFFER\n");
      std::exit(1);
    }
  }
  std::printf("  same model from every reader\n");
}

/// Freezes `model`, plans it with `ptrs` (defaults with the model's
/// overrides, no action cap) and prints the figures, `label` after the size.
void plan_and_print(const cluster_model& model, const std::vector<const goal*>& ptrs, std::size_t brokers,
                    std::size_t partitions, const char* label) {
  auto t0 = clock_type::now();
  auto frozen = snapshot::freeze(model);
  const double freeze_s = seconds_since(t0);
  if (!frozen) {
    std::printf("invalid model: %s\n", frozen.error().c_str());
    std::exit(1);
  }
  std::vector<goal_binding> bound;
  for (const goal* g : ptrs) {
    goal_config cfg = g->default_config();
    if (auto it = model.goals.find(g->name()); it != model.goals.end()) cfg = it->second.apply_to(cfg);
    bound.push_back({g, cfg});
  }
  bound = order_goals(std::move(bound));
  t0 = clock_type::now();
  const plan p = run_detector(frozen.value(), bound, model.max_actions);
  const double plan_s = seconds_since(t0);
  std::printf("%zux%zu%s: model load (freeze) %.3f s, plan %.3f s, actions %zu, balancedness %.1f -> %.1f, "
              "peak RSS %.0f MiB\n",
              brokers, partitions, label, freeze_s, plan_s, p.actions.size(), p.balancedness_before, p.balancedness_after,
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

void run(std::size_t brokers, std::size_t partitions, std::uint64_t seed, bool with_json,
         const std::string& write_dir, bool skew, bool topic_spread) {
  const auto goals = make_builtin_goals();
  std::vector<const goal*> ptrs;
  for (const auto& g : goals) ptrs.push_back(g.get());
  cluster_model model = make_model(brokers, partitions, seed, skew);

  if (with_json || !write_dir.empty()) {
    auto t0 = clock_type::now();
    const std::string text = model_to_json(model).dump();
    const double dump_s = seconds_since(t0);
    std::printf("%zux%zu json: %.1f MiB, dump %.3f s\n", brokers, partitions,
                static_cast<double>(text.size()) / 1048576.0, dump_s);
    if (!write_dir.empty()) {
      const std::string path =
        write_dir + "/model-" + std::to_string(brokers) + "x" + std::to_string(partitions) + ".json";
      std::ofstream(path, std::ios::binary) << text;
      std::printf("  wrote %s\n", path.c_str());
    }
    if (with_json) compare_readers(text);
  }

  plan_and_print(model, ptrs, brokers, partitions, "");
  if (topic_spread) {
    model.goals["TOPIC_SPREAD"].enabled = true;
    plan_and_print(model, ptrs, brokers, partitions, " with TOPIC_SPREAD on");
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::size_t, std::size_t>> sizes;
  bool with_json = false, skew = false, topic_spread = false;
  std::string write_dir;
  std::uint64_t seed = 42;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      with_json = true;
    } else if (a == "--write-models" && i + 1 < argc) {
      write_dir = argv[++i];
    } else if (a == "--skew") {
      skew = true;
    } else if (a == "--topic-spread") {
      topic_spread = true;
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (auto x = a.find('x'); x != std::string::npos) {
      sizes.emplace_back(std::strtoull(a.substr(0, x).c_str(), nullptr, 10),
                         std::strtoull(a.substr(x + 1).c_str(), nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: bench_goals [BROKERSxPARTITIONS ...] [--json] [--write-models DIR] [--seed N] "
                   "[--skew] [--topic-spread]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {{20, 100000}, {200, 1000000}};
  for (const auto& [b, p] : sizes) run(b, p, seed, with_json, write_dir, skew, topic_spread);
  return 0;
}
