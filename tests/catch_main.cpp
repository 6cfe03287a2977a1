// The one Catch2 main every test binary links (compiled once). Besides
// Catch's own verdict, a run fails when a program it started logged an
// error-level line the test did not expect (tests/support/process.hpp,
// expected_log_errors): child_process reports each such line here as it
// is destroyed, and they are printed after the run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>
#include <mutex>
#include <string>
#include <vector>

namespace {

std::mutex unexpected_mtx;
std::string current_test;             // the test case running, "" between them
std::vector<std::string> unexpected;  // "<test case>: <log file>: <line>"

/// Keeps current_test, so that each reported line names its test case.
struct current_test_listener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    std::lock_guard lock(unexpected_mtx);
    current_test = info.name;
  }
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    {
      std::lock_guard lock(unexpected_mtx);
      current_test.clear();
    }
    TestEventListenerBase::testCaseEnded(stats);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(current_test_listener)

extern "C" void moonmq_test_unexpected_log_error(const char* log_file, const char* line) {
  std::lock_guard lock(unexpected_mtx);
  unexpected.push_back((current_test.empty() ? std::string{"(outside a test case)"} : current_test) + ": " + log_file
                       + ": " + line);
}

int main(int argc, char* argv[]) {
  int rc = Catch::Session().run(argc, argv);
  std::lock_guard lock(unexpected_mtx);
  if (unexpected.empty())
    return rc;
  std::cerr << "\n" << unexpected.size()
            << " error-level log line(s) no test expected (declare them with test::expected_log_errors):\n";
  for (const auto& l : unexpected)
    std::cerr << "  " << l << "\n";
  return rc != 0 ? rc : 1;
}
