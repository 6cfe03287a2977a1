#pragma once
// The controller fence of one broker (without Raft): the highest controller
// epoch this broker has seen and the controller that claimed it. A broker
// that starts acting as controller claims the next epoch; every control-plane
// request carries (epoch, id) and a broker refuses one older than its highest
// (409). This is fencing, not consensus: two brokers claiming at the same
// moment against disjoint sets of reachable peers can both act until their
// claims meet (docs/cluster.md).
//
// On disk: `<data_dir>/controller-epoch.json`, written with
// util::write_file_atomic before a claim or a raise is acknowledged:
//   {"version":1,"epoch":7,"controller":"b2"}
// Absent file = epoch 0, no controller. A file that does not parse is refused
// with corrupt_state naming the file (forgetting the epoch would let a
// superseded controller act again). A left-over `.tmp` is ignored.
//
// Not thread-safe: one owner calls it.

#include <string>

#include "cluster/types.hpp"

namespace moonmq::cluster {

/// What observe() did with an accepted (epoch, id).
enum class observe_outcome {
  raised,   ///< newer than the highest: stored durably, it is the new highest
  current,  ///< equal to the highest, same controller: nothing to store
};

class controller_fence {
 public:
  /// File name under the data directory.
  static constexpr const char* file_name = "controller-epoch.json";

  /// Loads `<data_dir>/controller-epoch.json` (creating `data_dir` when
  /// missing). Errors: io_error, corrupt_state (names the file and field).
  static result<controller_fence> open(const std::string& data_dir);

  /// Claims controllership for `self`: epoch highest() + 1, persisted before
  /// returning. Errors: invalid_argument (bad broker id), io_error (nothing
  /// changed: the claim did not happen).
  result<epoch> claim(const broker_id& self);

  /// Checks a control-plane request's (`at`, `controller`). `at` > highest():
  /// accepted and persisted (raised). Equal with the same controller:
  /// accepted (current). Errors: stale_epoch (`at` < highest()),
  /// epoch_conflict (equal epoch, another controller), both with
  /// error::highest / error::holder set to highest() / holder();
  /// invalid_argument (`at` is 0 or a bad id); io_error (not raised).
  result<observe_outcome> observe(epoch at, const broker_id& controller);

  /// Highest epoch seen (0 = none).
  epoch highest() const { return highest_; }
  /// Controller that holds highest() ("" when none).
  const broker_id& holder() const { return holder_; }
  /// Path of the fence's file.
  const std::string& file() const { return file_; }

 private:
  explicit controller_fence(std::string file) : file_(std::move(file)) {}
  status write(epoch at, const broker_id& holder) const;
  error refused(errc code, const std::string& why) const;

  std::string file_;
  epoch highest_;
  broker_id holder_;
};

}  // namespace moonmq::cluster
