// moonmq-plan as a process: every balancing case through the real binary
// and its plugins, and exit code 2 with a clear message on invalid input.

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "tests/goals/case_check.hpp"

namespace fs = std::filesystem;
using moonmq::test::json;

namespace {

struct run_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("moonmq-plan-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

/// moonmq-plan with `args`, through the shell; `input`, when given, is a
/// shell command whose output is piped into its stdin ("cat m.json").
run_result run_plan(const std::string& args, const std::string& input = "") {
  temp_dir d;
  const std::string err_file = (d.path / "stderr").string();
  const std::string cmd =
    (input.empty() ? "" : input + " | ") + std::string(MOONMQ_PLAN_BIN) + " " + args + " 2>" + err_file;
  run_result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

json plan_with_binary(const json& model) {
  temp_dir d;
  const auto path = d.write("model.json", model.dump());
  const auto r = run_plan("--model " + path);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

void run_case(const std::string& name) {
  const json c = moonmq::test::read_json_file(moonmq::test::cases_dir() + "/" + name + ".json");
  const json plan = plan_with_binary(c.at("model"));
  INFO(plan.dump(1));
  const auto failures = moonmq::test::check_case(c.at("model"), plan, c.at("expect"), plan_with_binary);
  for (const auto& f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
}

}  // namespace

TEST_CASE("case dead-broker (moonmq-plan)", "[moonmq-plan]") { run_case("dead-broker"); }
TEST_CASE("case disk-capacity (moonmq-plan)", "[moonmq-plan]") { run_case("disk-capacity"); }
TEST_CASE("case excluded-topic (moonmq-plan)", "[moonmq-plan]") { run_case("excluded-topic"); }
TEST_CASE("case idle-all-zero (moonmq-plan)", "[moonmq-plan]") { run_case("idle-all-zero"); }
TEST_CASE("case idle-small-loads (moonmq-plan)", "[moonmq-plan]") { run_case("idle-small-loads"); }
TEST_CASE("case new-empty-broker (moonmq-plan)", "[moonmq-plan]") { run_case("new-empty-broker"); }
TEST_CASE("case single-broker (moonmq-plan)", "[moonmq-plan]") { run_case("single-broker"); }

TEST_CASE("moonmq-plan exits 2 with a clear message on invalid input", "[moonmq-plan]") {
  temp_dir d;
  auto r = run_plan("");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--model FILE is required") != std::string::npos);

  r = run_plan("--model " + (d.path / "missing.json").string());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("cannot read model file") != std::string::npos);

  r = run_plan("--model " + d.write("bad.json", "{\"brokers\": [ "));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("malformed JSON") != std::string::npos);

  r = run_plan("--model " + d.write("types.json", R"({"brokers":[{"id":1}],"partitions":[]})"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("brokers[0].id: expected a string") != std::string::npos);

  r = run_plan("--model " +
               d.write("owner.json", R"({"brokers":[{"id":"b1"}],"partitions":[{"topic":"t","partition":0,"owner":"b2"}]})"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("partitions[0].owner: unknown broker \"b2\"") != std::string::npos);

  const auto ok = d.write("ok.json", R"({"brokers":[{"id":"b1"}],"partitions":[]})");
  r = run_plan("--model " + ok + " --goals-dir " + (d.path / "nowhere").string());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("goals directory not found") != std::string::npos);

  r = run_plan("--model " + ok + " --frobnicate");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("unknown argument \"--frobnicate\"") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("moonmq-plan reads a model from a pipe as from a file, with the same errors", "[moonmq-plan]") {
  temp_dir d;
  const auto model = d.write(
      "m.json", R"({"brokers":[{"id":"b1"},{"id":"b2"}],
                   "partitions":[{"topic":"t","partition":0,"owner":"b1"},{"topic":"t","partition":1,"owner":"b1"}]})");
  // A model larger than a pipe's buffer and the reader's 64 KiB chunk.
  json big{{"brokers", json::array({{{"id", "b1"}}, {{"id", "b2"}}})}, {"partitions", json::array()}};
  for (int p = 0; p < 1200; ++p)
    big["partitions"].push_back({{"topic", "topic-with-a-long-name-to-fill-the-pipe"}, {"partition", p},
                                 {"owner", "b1"}, {"load", {{"nw_in", p}, {"disk", 1000 + p}}}});
  const auto large = d.write("large.json", big.dump());
  REQUIRE(fs::file_size(large) > 2 * 65536);
  for (const auto& path : {model, large}) {
    INFO(path);
    const auto from_file = run_plan("--model " + path);
    const auto from_pipe = run_plan("--model /dev/stdin", "cat " + path);
    INFO(from_pipe.err);
    REQUIRE(from_file.exit_code == 0);
    CHECK(from_pipe.exit_code == 0);
    CHECK(from_pipe.out == from_file.out);
  }

  const auto load = d.write("load.json", R"({"brokers":[{"id":"b1"}],
      "partitions":[{"topic":"t","partition":0,"owner":"b1","load":{"nw_in":"fast"}}]})");
  for (const auto& input : {std::string(), "cat " + load}) {
    const auto r = run_plan("--model " + (input.empty() ? load : "/dev/stdin"), input);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("partitions[0].load.nw_in: expected a number >= 0") != std::string::npos);
  }
  const auto empty = run_plan("--model " + d.write("empty.json", ""));
  CHECK(empty.exit_code == 2);
  CHECK(empty.err.find("malformed JSON") != std::string::npos);
  // procfs gives its files' size as 0: the text is read all the same.
  const auto proc = run_plan("--model /proc/self/status");
  CHECK(proc.exit_code == 2);
  CHECK(proc.err.find("malformed JSON") != std::string::npos);
  CHECK(proc.err.find("last read: 'N'") != std::string::npos);  // "Name:", its first line
  CHECK(proc.err.find("end of input") == std::string::npos);
  const auto directory = run_plan("--model " + d.path.string());
  CHECK(directory.exit_code == 2);
  CHECK(directory.err.find("cannot read model file") != std::string::npos);
}

TEST_CASE("moonmq-plan reads goals from --goals-dir and warns about unloadable files", "[moonmq-plan]") {
  temp_dir d;
  fs::create_directories(d.path / "goals");
  fs::copy_file(fs::path(MOONMQ_BINARY_DIR) / "bin/plugins/partition_count.so", d.path / "goals/partition_count.so");
  d.write("goals/broken.so", "not a library");
  const auto model = d.write(
      "m.json", R"({"brokers":[{"id":"b1"},{"id":"b2"}],
                   "partitions":[{"topic":"t","partition":0,"owner":"b1"},{"topic":"t","partition":1,"owner":"b1"}]})");
  const auto r = run_plan("--model " + model + " --goals-dir " + (d.path / "goals").string());
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("broken.so: cannot load library") != std::string::npos);
  const json plan = json::parse(r.out);
  REQUIRE(plan["goals"].size() == 1);
  CHECK(plan["goals"][0]["name"] == "PARTITION_COUNT");
  CHECK(plan["actions"].size() == 1);
}

#ifdef MOONMQ_BAD_TEXT_PLUGIN
TEST_CASE("moonmq-plan prints a plan whose goal plugin wrote text that is not UTF-8", "[moonmq-plan]") {
  // A plugin's text is untrusted: the bytes that are not UTF-8 are printed
  // as U+FFFD, and the rest of the plan is unchanged.
  temp_dir d;
  fs::create_directories(d.path / "goals");
  fs::copy_file(MOONMQ_BAD_TEXT_PLUGIN, d.path / "goals/bad_text.so");
  const auto model = d.write(
      "m.json", R"({"brokers":[{"id":"b1"},{"id":"b2"}],
                   "partitions":[{"topic":"t","partition":0,"owner":"b1"},{"topic":"t","partition":1,"owner":"b1"}]})");
  const auto r = run_plan("--model " + model + " --goals-dir " + (d.path / "goals").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json plan = json::parse(r.out);
  REQUIRE(plan["goals"].size() == 1);
  CHECK(plan["goals"][0]["name"] == "BAD_TEXT");
  const auto explanation = plan["goals"][0].value("explanation", std::string{});
  CHECK(explanation.find(" \xef\xbf\xbd\xef\xbf\xbd end") != std::string::npos);  // U+FFFD twice
  CHECK(plan["actions"].size() == 1);
}
#endif

TEST_CASE("moonmq-plan reads a case file and writes the plan's moves as a reassignment moonmqctl executes",
          "[moonmq-plan]") {
  const auto path = moonmq::test::cases_dir() + "/new-empty-broker.json";
  const auto whole = run_plan("--model " + path);
  INFO(whole.err);
  REQUIRE(whole.exit_code == 0);
  const auto plan = json::parse(whole.out);
  const auto r = run_plan("--model " + path + " --format reassignment");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto re = json::parse(r.out);
  CHECK(re["version"] == 1);
  // One entry per moved partition, to the plan's destination, in its order.
  REQUIRE(re["partitions"].size() == plan["actions"].size());
  for (std::size_t i = 0; i < plan["actions"].size(); ++i) {
    const auto& a = plan["actions"][i];
    const auto& p = re["partitions"][i];
    CHECK(p == json{{"topic", a["topic"]}, {"partition", a["partition"]}, {"replicas", json::array({a["to"]})}});
  }
  CHECK(run_plan("--model " + path + " --format yaml").exit_code == 2);
}
