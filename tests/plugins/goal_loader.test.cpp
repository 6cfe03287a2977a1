// The goal plugin loader: the built-in plugins load; each failure mode
// gives a clear per-file error and never crashes; libraries stay loaded
// while a goal they made is alive; reload picks up changes.

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "goals/detector.hpp"
#include "plugins/goal_loader.hpp"
#include "plugins/goal_plugin_abi.hpp"

namespace fs = std::filesystem;
using namespace moonmq::plugins;

namespace {

const std::string kFixtures = MOONMQ_FIXTURE_DIR;
const std::string kBuiltin = MOONMQ_PLUGIN_DIR;

// A fresh temporary directory, removed at scope exit.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("moonmq-plugins-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  void add(const std::string& fixture) const {
    fs::copy_file(kFixtures + "/" + fixture + ".so", path / (fixture + ".so"), fs::copy_options::overwrite_existing);
  }
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const load_error* error_for(const load_report& r, const std::string& file) {
  for (const auto& e : r.errors)
    if (fs::path(e.path).filename() == file) return &e;
  return nullptr;
}

bool library_loaded(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

}  // namespace

TEST_CASE("the nine built-in goal plugins load from the plugins dir", "[plugins]") {
  const auto r = load_goal_dir(kBuiltin);
  CHECK(r.errors.empty());
  std::vector<std::string> names;
  for (const auto& g : r.goals) {
    names.push_back(g.name);
    CHECK(g.abi == MOONMQ_GOAL_ABI_VERSION);
    CHECK(g.goal->name() == g.name);
    CHECK(g.version == "1.0.0");
  }
  CHECK(names == std::vector<std::string>{"DISK", "DISK_CAPACITY", "NW_IN", "NW_IN_CAPACITY", "NW_OUT",
                                          "NW_OUT_CAPACITY", "PARTITION_COUNT", "SLOW_BROKER", "TOPIC_SPREAD"});
  const auto j = plugins_json(r);
  REQUIRE(j["goals"].size() == 9);
  // SLOW_BROKER ranks above the distribution goals, below the capacity goals.
  CHECK(j["goals"][7]["priority"] == 60);
  CHECK(j["goals"][7]["hard"] == false);
  CHECK(r.goals[7].goal->default_config().enabled);
  // TOPIC_SPREAD ranks below every distribution goal and is off by default.
  CHECK(j["goals"][8]["priority"] == 10);
  CHECK(j["goals"][8]["hard"] == false);
  CHECK_FALSE(r.goals[8].goal->default_config().enabled);
  const auto& disk_cap = j["goals"][1];
  CHECK(disk_cap["name"] == "DISK_CAPACITY");
  CHECK(disk_cap["hard"] == true);
  CHECK(disk_cap["priority"] == 100);
  CHECK(disk_cap["abi"] == MOONMQ_GOAL_ABI_VERSION);
  CHECK(contains(disk_cap["path"].get<std::string>(), "disk_capacity.so"));
  CHECK(j["errors"].empty());
}

TEST_CASE("a plugin built for another ABI version is refused naming the path and both versions", "[plugins]") {
  temp_dir d;
  d.add("wrong_abi");
  const auto r = load_goal_dir(d.str());
  CHECK(r.goals.empty());
  const auto* e = error_for(r, "wrong_abi.so");
  REQUIRE(e != nullptr);
  CHECK(contains(e->message, (d.path / "wrong_abi.so").string()));
  CHECK(contains(e->message, "ABI version 999"));
  CHECK(contains(e->message, "host expects " + std::to_string(MOONMQ_GOAL_ABI_MIN_VERSION) + " to " +
                                 std::to_string(MOONMQ_GOAL_ABI_VERSION)));
}

TEST_CASE("a plugin built for the oldest ABI version the host accepts loads and runs", "[plugins]") {
  temp_dir d;
  d.add("older_abi");
  const auto r = load_goal_dir(d.str());
  REQUIRE(r.errors.empty());
  REQUIRE(r.goals.size() == 1);
  CHECK(r.goals[0].abi == MOONMQ_GOAL_ABI_MIN_VERSION);
  CHECK(r.goals[0].goal->name() == "OLDER_ABI");
}

TEST_CASE("a library without the entry point is refused", "[plugins]") {
  temp_dir d;
  d.add("no_entry");
  const auto r = load_goal_dir(d.str());
  CHECK(r.goals.empty());
  const auto* e = error_for(r, "no_entry.so");
  REQUIRE(e != nullptr);
  CHECK(contains(e->message, "missing entry point moonmq_goal_plugin"));
}

TEST_CASE("a failing factory is reported with its message", "[plugins]") {
  temp_dir d;
  d.add("factory_fails");
  const auto r = load_goal_dir(d.str());
  CHECK(r.goals.empty());
  const auto* e = error_for(r, "factory_fails.so");
  REQUIRE(e != nullptr);
  CHECK(contains(e->message, "factory failed: fixture factory refuses"));
}

TEST_CASE("a duplicate goal name is refused naming both files", "[plugins]") {
  temp_dir d;
  d.add("dup_a");
  d.add("dup_b");
  const auto r = load_goal_dir(d.str());
  REQUIRE(r.goals.size() == 1);
  CHECK(r.goals[0].name == "DUPLICATE");
  CHECK(r.goals[0].version == "1.0.0");  // dup_a sorts first and wins
  const auto* e = error_for(r, "dup_b.so");
  REQUIRE(e != nullptr);
  CHECK(contains(e->message, "duplicate goal name \"DUPLICATE\""));
  CHECK(contains(e->message, "dup_a.so"));
  CHECK(contains(e->message, "dup_b.so"));
}

TEST_CASE("a file that is not a shared library and a missing directory give errors", "[plugins]") {
  temp_dir d;
  { std::ofstream(d.path / "garbage.so") << "not an ELF file"; }
  { std::ofstream(d.path / "notes.txt") << "ignored"; }
  d.add("fixture_ok");
  const auto r = load_goal_dir(d.str());
  REQUIRE(r.goals.size() == 1);
  CHECK(r.goals[0].name == "FIXTURE_OK");
  REQUIRE(r.errors.size() == 1);
  CHECK(contains(r.errors[0].message, "garbage.so: cannot load library"));

  const auto missing = load_goal_dir(d.str() + "/does-not-exist");
  CHECK(missing.goals.empty());
  REQUIRE(missing.errors.size() == 1);
  CHECK(contains(missing.errors[0].message, "goals directory not found"));
}

TEST_CASE("all failure modes in one directory: good plugins still load", "[plugins]") {
  temp_dir d;
  for (const char* f : {"fixture_ok", "dup_a", "dup_b", "factory_fails", "wrong_abi", "no_entry"}) d.add(f);
  const auto r = load_goal_dir(d.str());
  CHECK(r.goals.size() == 2);  // FIXTURE_OK and DUPLICATE
  CHECK(r.errors.size() == 4);
  const auto j = plugins_json(r);
  CHECK(j["errors"].size() == 4);
  for (const auto& e : j["errors"]) CHECK(contains(e["error"].get<std::string>(), e["path"].get<std::string>()));
}

TEST_CASE("a library stays loaded while a goal it made is alive", "[plugins]") {
  temp_dir d;
  d.add("fixture_ok");
  const std::string path = (d.path / "fixture_ok.so").string();
  std::shared_ptr<const moonmq::goals::goal> kept;
  {
    goal_registry reg(d.str());
    const auto r = reg.reload();
    REQUIRE(r.goals.size() == 1);
    kept = r.goals[0].goal;
    CHECK(library_loaded(path));
  }
  // Registry and report are gone; the goal still works and its library is mapped.
  CHECK(library_loaded(path));
  CHECK(kept->name() == "FIXTURE_OK");
  CHECK(kept->default_config().priority == 20);
  kept.reset();
  CHECK_FALSE(library_loaded(path));
}

TEST_CASE("reload returns the new set and per-file errors", "[plugins]") {
  temp_dir d;
  goal_registry reg(d.str());
  CHECK(reg.reload().goals.empty());
  d.add("fixture_ok");
  auto r = reg.reload();
  REQUIRE(r.goals.size() == 1);
  auto old = r.goals[0].goal;
  d.add("wrong_abi");
  d.add("dup_a");
  r = reg.reload();
  CHECK(r.goals.size() == 2);
  CHECK(r.errors.size() == 1);
  CHECK(reg.current().goals.size() == 2);
  fs::remove(d.path / "fixture_ok.so");
  r = reg.reload();
  REQUIRE(r.goals.size() == 1);
  CHECK(r.goals[0].name == "DUPLICATE");
  CHECK(old->name() == "FIXTURE_OK");  // handed out before the reload: still valid
}

TEST_CASE("goals loaded from plugins plan like the SDK goals", "[plugins]") {
  const auto r = load_goal_dir(kBuiltin);
  std::vector<const moonmq::goals::goal*> ptrs;
  for (const auto& g : r.goals) ptrs.push_back(g.goal.get());
  moonmq::goals::cluster_model m;
  m.brokers.resize(2);
  m.brokers[0].id = "b1";
  m.brokers[1].id = "b2";
  for (int p = 0; p < 8; ++p) {
    moonmq::goals::replica_spec rs;
    rs.topic = "t";
    rs.partition = p;
    rs.owner = "b1";
    m.replicas.push_back(rs);
  }
  auto plan = moonmq::goals::make_plan(m, ptrs);
  REQUIRE(plan.ok());
  CHECK(plan->actions.size() == 4);
  CHECK(plan->actions[0].goal == "PARTITION_COUNT");
}
