// Every balancing case in tests/goals/cases/ through the library
// (model_from_json -> make_plan with the built-in goals -> plan_to_json).

#include <catch2/catch.hpp>

#include "goals/detector.hpp"
#include "goals/model_json.hpp"
#include "tests/goals/case_check.hpp"

namespace {

using moonmq::test::json;

json plan_with_library(const json& model) {
  static const auto goals = moonmq::goals::make_builtin_goals();
  std::vector<const moonmq::goals::goal*> ptrs;
  for (const auto& g : goals) ptrs.push_back(g.get());
  auto m = moonmq::goals::model_from_json(model);
  REQUIRE(m.ok());
  auto p = moonmq::goals::make_plan(m.value(), ptrs);
  REQUIRE(p.ok());
  return moonmq::goals::plan_to_json(p.value());
}

void run_case(const std::string& name) {
  const json c = moonmq::test::read_json_file(moonmq::test::cases_dir() + "/" + name + ".json");
  const json plan = plan_with_library(c.at("model"));
  INFO(plan.dump(1));
  const auto failures = moonmq::test::check_case(c.at("model"), plan, c.at("expect"), plan_with_library);
  for (const auto& f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
}

}  // namespace

TEST_CASE("cases folder holds exactly the known cases", "[cases]") {
  CHECK(moonmq::test::case_names(moonmq::test::cases_dir()) == moonmq::test::known_cases());
}

TEST_CASE("case dead-broker (library)", "[cases]") { run_case("dead-broker"); }
TEST_CASE("case disk-capacity (library)", "[cases]") { run_case("disk-capacity"); }
TEST_CASE("case excluded-topic (library)", "[cases]") { run_case("excluded-topic"); }
TEST_CASE("case idle-all-zero (library)", "[cases]") { run_case("idle-all-zero"); }
TEST_CASE("case idle-small-loads (library)", "[cases]") { run_case("idle-small-loads"); }
TEST_CASE("case new-empty-broker (library)", "[cases]") { run_case("new-empty-broker"); }
TEST_CASE("case single-broker (library)", "[cases]") { run_case("single-broker"); }

TEST_CASE("case checker catches a plan that breaks expectations", "[cases]") {
  // The checker itself must be able to fail: feed it an empty plan for a case that needs moves.
  const json c = moonmq::test::read_json_file(moonmq::test::cases_dir() + "/dead-broker.json");
  json plan = plan_with_library(c.at("model"));
  plan["actions"] = json::array();
  plan["brokers_after"] = plan["brokers_before"];
  const auto failures = moonmq::test::check_case(c.at("model"), plan, c.at("expect"), plan_with_library);
  CHECK_FALSE(failures.empty());
}
