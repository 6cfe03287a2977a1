// MOONMQ_INVARIANT: silent while the condition holds, and when it does not,
// the handler gets the condition's text, where it is and the formatted
// detail (the default handler aborts; this test's throws instead).

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "util/invariant.hpp"

namespace {

struct broken : std::runtime_error {
  broken(std::string w, std::string a, std::string d)
      : std::runtime_error(d), what_text(std::move(w)), at(std::move(a)), detail(std::move(d)) {}
  std::string what_text, at, detail;
};

/// Installs a throwing handler for the scope.
struct throwing_handler {
  throwing_handler() {
    previous = moonmq::util::set_invariant_handler(
      [](const std::string& w, const std::string& a, const std::string& d) { throw broken(w, a, d); });
  }
  ~throwing_handler() { moonmq::util::set_invariant_handler(std::move(previous)); }
  moonmq::util::invariant_handler previous;
};

int evaluations = 0;
bool counted(bool v) {
  ++evaluations;
  return v;
}

}  // namespace

TEST_CASE("invariant: a condition that holds costs nothing more, a broken one names itself", "[util]") {
  throwing_handler h;
  evaluations = 0;
  MOONMQ_INVARIANT(counted(true), "never formatted {}", 1);
  CHECK(evaluations == 1);  // the condition runs once

  const long base = 7, end = 9;
  try {
    MOONMQ_INVARIANT(base == end, "batch at {} but the log ends at {}", base, end);
    FAIL("a broken invariant must reach the handler");
  } catch (const broken& b) {
    CHECK(b.what_text == "base == end");
    CHECK(b.detail == "batch at 7 but the log ends at 9");
    CHECK(b.at.find("invariant.test.cpp:") != std::string::npos);
  }
}
