// The one Catch2 main every test binary links (compiled once). Besides
// Catch's own verdict, a run fails when a program it started logged an
// error-level line the test did not expect (tests/support/process.hpp,
// expected_log_errors): child_process reports each such line here as it
// is destroyed, and they are printed after the run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <atomic>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

namespace {

std::mutex unexpected_mtx;
std::vector<std::string> unexpected;  // "<test case>: <log file>: <line>"
std::atomic<bool> run_over{false};    // Catch's run context is gone once Session::run returned

/// The test case running now. Read from Catch's run context rather than
/// kept by a listener: any listener makes Catch stringify every passing
/// assertion (ListeningReporter reports them all), which slowed the
/// assertion-heavy scenario tests 2.5 times.
std::string current_test_name() {
  if (run_over)
    return {};
  auto* capture = Catch::getCurrentContext().getResultCapture();
  return capture ? capture->getCurrentTestName() : std::string{};
}

}  // namespace

extern "C" void moonmq_test_unexpected_log_error(const char* log_file, const char* line) {
  auto test = current_test_name();
  std::lock_guard lock(unexpected_mtx);
  unexpected.push_back((test.empty() ? std::string{"(outside a test case)"} : test) + ": " + log_file + ": " + line);
}

int main(int argc, char* argv[]) {
  int rc = Catch::Session().run(argc, argv);
  std::lock_guard lock(unexpected_mtx);
  run_over = true;
  if (unexpected.empty())
    return rc;
  std::cerr << "\n" << unexpected.size()
            << " error-level log line(s) no test expected (declare them with test::expected_log_errors):\n";
  for (const auto& l : unexpected)
    std::cerr << "  " << l << "\n";
  return rc != 0 ? rc : 1;
}
