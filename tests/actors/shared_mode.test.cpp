// Shared storage: a take-back's takeover waits out the destination's lease
// (docs/shared-storage.md "Take-back"): cluster::takeover_hold on an
// injected clock, and shared_mode reading it from the applied image.

#include <catch2/catch.hpp>

#include "actors/shared_mode.hpp"
#include "cluster/takeover_hold.hpp"
#include "util/clock.hpp"

using namespace moonmq;

TEST_CASE("takeover hold: an epoch waits hold_ms from the first time it is asked about", "[shared][hold]") {
  cluster::takeover_hold hold{1100};
  CHECK(hold.holding("orders", 0, 3, 5000));
  CHECK(hold.remaining_ms("orders", 0, 3, 5000) == 1100);
  // Asking again does not restart it.
  CHECK(hold.holding("orders", 0, 3, 6000));
  CHECK(hold.remaining_ms("orders", 0, 3, 6099) == 1);
  CHECK_FALSE(hold.holding("orders", 0, 3, 6100));
  CHECK(hold.remaining_ms("orders", 0, 3, 6100) == 0);
  // Other partitions and epochs have holds of their own.
  CHECK(hold.holding("orders", 1, 3, 6100));
  CHECK(hold.holding("orders", 0, 5, 6100));
  CHECK(hold.remaining_ms("orders", 0, 3, 6100) == 0);  // dropped with the later epoch
  CHECK(hold.remaining_ms("orders", 0, 5, 6100) == 1100);
  // No hold configured: nothing waits.
  cluster::takeover_hold none{0};
  CHECK_FALSE(none.holding("orders", 0, 3, 5000));
}

namespace {

std::shared_ptr<owner_view> image_with(const std::string& owner, int64_t epoch, const move_info& move) {
  cluster::topic_partition tp{"orders", 0};
  auto view = std::make_shared<owner_view>();
  view->set(std::make_shared<const owner_map>(owner_map{{tp, owner}}), std::make_shared<const topic_image>(),
            std::make_shared<const std::string>("{}"), std::make_shared<const broker_standing>(),
            std::make_shared<const epoch_map>(epoch_map{{tp, epoch}}),
            std::make_shared<const move_image>(move_image{{"m1", move}}));
  return view;
}

move_info move_of(const std::string& state, int64_t cutover_epoch) {
  move_info m;
  m.tp = {"orders", 0};
  m.from = "b1";
  m.to = "b2";
  m.state = state;
  m.epoch = cutover_epoch;
  return m;
}

}  // namespace

TEST_CASE("shared mode: a source that took its partition back opens it only after the hold", "[shared][hold]") {
  auto hold = std::make_shared<cluster::takeover_hold>(3600 * 1000);  // an hour: never over in this test
  SECTION("taken back after the cutover (epoch 2 -> 3): held, at the source only") {
    auto view = image_with("b1", 3, move_of("rolling_back", 2));
    CHECK(view->taken_back_epoch({"orders", 0}) == 3);
    shared_mode source{view, "b1", nullptr, hold};
    CHECK(source.epoch_of("orders", 0) == 0);
    CHECK(source.after_take_back("orders", 0, 3));
    CHECK(hold->remaining_ms("orders", 0, 3, util::monotonic_ms()) > 0);
    CHECK_FALSE(source.holds("orders", 0, 3));
    shared_mode destination{view, "b2", nullptr, hold};
    CHECK(destination.epoch_of("orders", 0) == 0);  // not its partition any more
    shared_mode no_hold{view, "b1", nullptr, nullptr};
    CHECK(no_hold.epoch_of("orders", 0) == 3);  // local-mode-like: no lease to wait out
  }
  SECTION("the move failed after its rollback: still held at the same epoch") {
    shared_mode source{image_with("b1", 3, move_of("failed", 2)), "b1", nullptr, hold};
    CHECK(source.epoch_of("orders", 0) == 0);
  }
  SECTION("an owner change since (the controller's failover, which waited the hold itself): no hold") {
    shared_mode next{image_with("b3", 4, move_of("failed", 2)), "b3", nullptr, hold};
    CHECK(next.epoch_of("orders", 0) == 4);
    CHECK_FALSE(next.after_take_back("orders", 0, 4));
  }
  SECTION("a move failed before its cutover: the source never stopped owning it, no hold") {
    shared_mode source{image_with("b1", 1, move_of("failed", 0)), "b1", nullptr, hold};
    CHECK(source.epoch_of("orders", 0) == 1);
  }
  SECTION("a move done in place: the destination serves at the cutover's epoch") {
    shared_mode destination{image_with("b2", 2, move_of("done", 2)), "b2", nullptr, hold};
    CHECK(destination.epoch_of("orders", 0) == 2);
    CHECK(destination.holds("orders", 0, 2));
  }
}
