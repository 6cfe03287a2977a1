#pragma once
// What the transaction scenarios on three brokers share
// (kafka_txn.test.cpp, kafka_txn_fail.test.cpp): reading a script's output,
// the python reader of a topic at an isolation level, a python script run in
// the background that waits for the test between its steps, and the
// coordinator's record of a transactional id.

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/node/move_cluster.hpp"
#include "tests/support/process.hpp"

namespace moonmq::test {

/// The output lines of a script that start with `prefix`, without it.
std::multiset<std::string> lines_with(const std::string& out, const std::string& prefix);

/// Values "<tag>-<i>" for i in [0, n).
std::multiset<std::string> values(const std::string& tag, int n);

/// Python (confluent-kafka) defining `read(level, want)`: a consumer of
/// partition 0 of every topic of the list `topics` (a python variable of
/// the script, as `bs` the bootstrap list) from offset 0 at isolation
/// `level`, polling until it has `want` records and then 3 s without one,
/// printing "<level> <value>" per record.
std::string python_reader();

/// A python script running in the background (python3 -u, output to a file
/// in `dir`; SIGKILLed when destroyed), for steps that the test must
/// interleave with its own: the script waits for `proceed(step)` with
/// `wait_for(step)` (a python function defined before `code`, which polls for
/// a file and exits the script after 60 s).
class python_run {
public:
  python_run(const std::string& dir, const std::string& name, const std::string& code);
  /// Whether the script printed a line starting with `prefix` within `timeout`.
  bool printed(const std::string& prefix, std::chrono::milliseconds timeout);
  /// REQUIREs such a line, failing with the script's output.
  void expect(const std::string& prefix, std::chrono::milliseconds timeout);
  /// Lets the script past its `wait_for(step)`.
  void proceed(const std::string& step);
  /// The exit code within `timeout` (nullopt if still running).
  std::optional<int> wait(std::chrono::milliseconds timeout) { return proc_.wait(timeout); }
  std::string output() const { return read_text(log_); }

private:
  std::string name_;  ///< the script's path; step files are "<name_>.<step>"
  std::string log_;
  child_process proc_;
};

/// The record of `transactional_id` in the metadata image of the broker whose
/// admin port is `admin` (GET /admin/transactions); null when it has none.
nlohmann::json txn_record(uint16_t admin, const std::string& transactional_id);

/// A transactional id that broker `first` coordinates over `all` and, for
/// each set of `also`, over that set too (placement over unfenced brokers,
/// cluster::group_coordinator).
std::string txn_id_coordinated_by(const std::string& first, const std::vector<std::string>& all,
                                  const std::vector<std::vector<std::string>>& also = {});

}  // namespace moonmq::test
