// The destination half of a move, in one process (actors/move_destination.hpp,
// docs/cluster.md "How a move runs"): a real broker and its partitions, the
// metadata log's image held by the test, and a cluster state that applies
// owner entries to that image as the log would (a conditional entry only at
// the epoch it expects). Each step is checked for what it writes, what it
// refuses and what it leaves sealed.

#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include "actors/errors.hpp"
#include "actors/move_destination.hpp"
#include "actors/registry.hpp"
#include "actors/system.hpp"
#include "dataplane/topic_catalog.hpp"
#include "storage/record_batch.hpp"
#include "tests/actors/partition_fixture.hpp"
#include "tests/support/process.hpp"

using namespace moonmq;
using moonmq::test::temp_dir;
using moonmq::test::partitions::batch_of;
using namespace std::chrono_literals;

namespace {

const cluster::topic_partition tp{"t", 0};

/// The owner entries the fake cluster state applied, in order.
struct owner_log {
  std::mutex mtx;
  std::vector<std::string> entries;  ///< "owner@expected-epoch" (expected 0: unconditional)
  /// Set: the log already holds this broker's take-back of the partition,
  /// ordered before any conditional entry still to come (which it refuses).
  std::string taken_back_by;
};

/// Applies (topic, partition) owner entries to `image` as the metadata log
/// would: an unconditional entry names the owner; a conditional one only
/// at the epoch it expects, bumping it, else conflict owner_epoch_changed.
caf::behavior fake_cluster_state(caf::event_based_actor*, std::shared_ptr<owner_view> image,
                                 std::shared_ptr<owner_log> log) {
  auto apply = [image, log](const std::string& topic, int32_t partition, const std::string& owner,
                            int64_t expected) -> caf::result<bool> {
    cluster::topic_partition at{topic, partition};
    auto name = [image, at](const std::string& who, int64_t epoch) {
      auto cut = image->ownership();
      auto owners = std::make_shared<owner_map>(*cut.owners);
      auto epochs = std::make_shared<epoch_map>(*cut.epochs);
      (*owners)[at] = who;
      (*epochs)[at] = epoch;
      image->set(owners, image->topics(), std::make_shared<const std::string>("{}"), cut.standing, epochs, cut.moves);
    };
    auto [current, epoch] = image->owner_and_epoch(at);
    std::lock_guard<std::mutex> g{log->mtx};
    if (expected > 0 && !log->taken_back_by.empty()) {
      name(log->taken_back_by, epoch + 1);  // the take-back applies first
      return make_coded_error(fault::conflict, "owner_epoch_changed", "the owner epoch moved on");
    }
    if (expected > 0 && epoch != expected)
      return make_coded_error(fault::conflict, "owner_epoch_changed", "the owner epoch moved on");
    name(owner, current == owner && expected == 0 ? epoch : epoch + 1);
    log->entries.push_back(owner + "@" + std::to_string(expected));
    return true;
  };
  return {
    [apply](owner_atom, const std::string& topic, int32_t partition, const std::string& owner, int64_t) {
      return apply(topic, partition, owner, 0);
    },
    [apply](owner_atom, const std::string& topic, int32_t partition, const std::string& owner, int64_t,
            int64_t expected) { return apply(topic, partition, owner, expected); },
  };
}

/// Merges pushed offsets by answering how many rows it was given.
caf::behavior fake_groups(caf::event_based_actor*) {
  return {[](merge_atom, const std::string&, int32_t, const std::string& offsets) {
    return static_cast<int32_t>(nlohmann::json::parse(offsets).size());
  }};
}

struct destination_fixture {
  explicit destination_fixture(bool shared = false) : cfg(make_system_config({})), sys(*cfg), self(sys) {
    std::string error;
    auto catalog = dataplane::topic_catalog::load(dir.path(), error);
    REQUIRE(catalog);
    broker_settings s;
    s.broker_id = "b1";
    s.data_dir = dir.path();
    s.retention_check_ms = 0;
    s.image = image;
    s.io.threads = 1;
    s.io.data_dir = dir.path();
    registry = spawn_registry(sys, 500ms);
    broker = spawn_broker(sys, s, std::move(*catalog), view, registry);
    state = caf::actor_cast<cluster_state_actor>(sys.spawn(fake_cluster_state, image, entries));
    groups = caf::actor_cast<group_actor>(sys.spawn(fake_groups));
    move_destination_settings ds;
    ds.broker_id = "b1";
    ds.timeout = 10s;
    ds.shared = shared;
    dest = spawn_move_destination(sys, ds, view, image, state, broker, groups, registry);
    // The source, b2, owns the partition at epoch 1.
    set_image("b2", 1);
  }
  ~destination_fixture() {
    for (auto a : {caf::actor_cast<caf::actor>(dest), caf::actor_cast<caf::actor>(state),
                   caf::actor_cast<caf::actor>(groups), caf::actor_cast<caf::actor>(broker),
                   caf::actor_cast<caf::actor>(registry)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }

  /// The image names `owner` of t/0 at `epoch`, with `moves`.
  void set_image(const std::string& owner, int64_t epoch, move_image moves = {}) {
    auto topics = std::make_shared<topic_image>();
    (*topics)["t"] = topic_info{1, "", 5};
    image->set(std::make_shared<owner_map>(owner_map{{tp, owner}}), topics, std::make_shared<const std::string>("{}"),
               std::make_shared<const broker_standing>(), std::make_shared<epoch_map>(epoch_map{{tp, epoch}}),
               std::make_shared<const move_image>(std::move(moves)));
  }

  /// The step's answer, or its error in `err`.
  template <class... Ts>
  std::optional<cluster::move_answer> ask(caf::error& err, Ts&&... xs) {
    std::optional<cluster::move_answer> out;
    self->request(dest, 20s, std::forward<Ts>(xs)...)
      .receive([&](cluster::move_answer& a) { out = a; }, [&](caf::error& e) { err = e; });
    return out;
  }
  std::optional<cluster::move_answer> ensure(caf::error& err, int64_t log_start = 0, std::string move_id = {},
                                             int64_t attempt = 0) {
    cluster::move_ensure e;
    e.from = "b2";
    e.partitions = 1;
    e.log_start_offset = log_start;
    e.move_id = std::move(move_id);
    e.attempt = attempt;
    return ask(err, ensure_atom::value, std::string{"t"}, int32_t{0}, e, int64_t{1});
  }
  std::optional<cluster::move_answer> append(caf::error& err, int64_t expected, std::string batches) {
    return ask(err, copy_atom::value, std::string{"t"}, int32_t{0}, expected, std::move(batches), true);
  }
  std::optional<cluster::move_answer> confirm(caf::error& err, int64_t end, int64_t cutover_epoch) {
    cluster::move_confirm c;
    c.from = "b2";
    c.log_end_offset = end;
    c.owner_epoch = cutover_epoch;
    return ask(err, confirm_atom::value, std::string{"t"}, int32_t{0}, c, int64_t{1});
  }
  std::optional<cluster::move_answer> cleanup(caf::error& err, std::string move_id = {}) {
    return ask(err, cleanup_atom::value, std::string{"t"}, int32_t{0}, cluster::move_cleanup{"b2", std::move(move_id)},
               int64_t{1});
  }

  /// A produce to the local copy: its base offset, or the error's code.
  std::string produce() {
    std::string out;
    self->request(view->get()->at("t").partitions.at(0), 10s, append_atom::value, batch_of(1, "p"), true)
      .receive([&](int64_t base) { out = std::to_string(base); }, [&](caf::error& e) { out = error_code_of(e); });
    return out;
  }
  std::vector<std::string> owner_entries() {
    std::lock_guard<std::mutex> g{entries->mtx};
    return entries->entries;
  }

  temp_dir dir{"moonmq-move-dest"};
  std::shared_ptr<owner_view> image = std::make_shared<owner_view>();
  std::shared_ptr<catalog_view> view = std::make_shared<catalog_view>();
  std::shared_ptr<owner_log> entries = std::make_shared<owner_log>();
  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  registry_actor registry;
  broker_actor broker;
  cluster_state_actor state;
  group_actor groups;
  move_destination_actor dest;
};

}  // namespace

TEST_CASE("a move's destination: ensure creates a sealed copy, batches land at exactly their offsets, confirm takes "
          "ownership by a conditional entry and unseals",
          "[move_destination]") {
  destination_fixture f;
  caf::error err;
  // Step 1: the topic did not exist here; the copy starts empty at the
  // source's log start, sealed, and the source stays owner.
  auto ensured = f.ensure(err, 0);
  REQUIRE(ensured);
  CHECK(ensured->log_start_offset == 0);
  CHECK(ensured->log_end_offset == 0);
  CHECK_FALSE(ensured->copy_none);
  CHECK(f.image->owner_and_epoch(tp) == std::make_pair(std::string{"b2"}, int64_t{1}));
  CHECK(f.produce() == "partition_moved");
  // Step 2: a batch at the copy's end is applied; one behind it is an
  // offset mismatch that names where the copy ends.
  auto appended = f.append(err, 0, batch_of(3, "r"));
  REQUIRE(appended);
  CHECK(appended->log_end_offset == 3);
  CHECK_FALSE(f.append(err, 0, batch_of(3, "r")));
  CHECK(error_code_of(err) == "offset_mismatch");
  CHECK(http_status_of(err) == 409);
  int64_t end = 0;
  CHECK(mismatch_log_end(err, end));
  CHECK(end == 3);
  // Step 5: pushed group offsets reach the group coordinator.
  cluster::move_offsets pushed{"t", 0, nlohmann::json::array({{{"group", "g"}}, {{"group", "h"}}})};
  int32_t merged = -1;
  f.self->request(f.dest, 10s, merge_atom::value, pushed)
    .receive([&](int32_t n) { merged = n; }, [&](caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(merged == 2);
  // Step 6 before this broker applied the cutover: retried, nothing written.
  CHECK_FALSE(f.confirm(err, 3, 2));
  CHECK(error_code_of(err) == "not_ready");
  CHECK(http_status_of(err) == 503);
  // The cutover applied (b1 owner at epoch 2). A confirm naming another
  // end than the copy's is refused and leaves it sealed.
  f.set_image("b1", 2);
  CHECK_FALSE(f.confirm(err, 4, 2));
  CHECK(error_code_of(err) == "offset_mismatch");
  CHECK(f.produce() == "partition_moved");
  CHECK(f.owner_entries().empty());
  // The right end: the conditional entry at epoch 2 bumps it to 3, and the
  // copy serves produce after the copied offsets.
  auto confirmed = f.confirm(err, 3, 2);
  REQUIRE(confirmed);
  CHECK(confirmed->owner == "b1");
  CHECK(confirmed->log_end_offset == 3);
  CHECK_FALSE(confirmed->already_confirmed);
  CHECK(f.owner_entries() == std::vector<std::string>{"b1@2"});
  CHECK(f.image->owner_and_epoch(tp) == std::make_pair(std::string{"b1"}, int64_t{3}));
  CHECK(f.produce() == "3");
  // This broker owns the copy now: a cleanup may not discard it.
  CHECK_FALSE(f.cleanup(err));
  CHECK(error_code_of(err) == "destination_owns_partition");
}

// A retried ensure carries a higher attempt (docs/cluster.md "Moves under
// network faults"): one that arrives after a later attempt of its move, or
// twice, is refused and leaves the copy as it is.
TEST_CASE("a move's destination refuses an ensure older than one it received for the same move",
          "[move_destination]") {
  destination_fixture f;
  caf::error err;
  REQUIRE(f.ensure(err, 0, "b2-7", 10));
  REQUIRE(f.append(err, 0, batch_of(3, "r")));
  for (int64_t stale : {9, 10}) {
    INFO("attempt " << stale);
    CHECK_FALSE(f.ensure(err, 0, "b2-7", stale));
    CHECK(error_code_of(err) == "stale_ensure");
    CHECK(http_status_of(err) == 409);
  }
  // The copy was not reset: the next batch still lands at 3.
  auto next = batch_of(2, "r");
  REQUIRE(storage::set_base_offset(next, storage::offset{3}));
  auto appended = f.append(err, 3, next);
  REQUIRE(appended);
  CHECK(appended->log_end_offset == 5);
  // A later attempt of the move starts the copy again, as does a later
  // move (the source's attempts rise across its moves).
  auto again = f.ensure(err, 0, "b2-7", 11);
  REQUIRE(again);
  CHECK(again->log_end_offset == 0);
  REQUIRE(f.append(err, 0, batch_of(1, "r")));
  auto other = f.ensure(err, 0, "b2-8", 12);
  REQUIRE(other);
  CHECK(other->log_end_offset == 0);
  // An ensure of the earlier move sent before that one, arriving late.
  CHECK_FALSE(f.ensure(err, 0, "b2-7", 11));
  CHECK(error_code_of(err) == "stale_ensure");
  // One whose move the metadata log has ended, whatever its attempt.
  move_info ended;
  ended.tp = tp;
  ended.from = "b2";
  ended.to = "b1";
  ended.state = "failed";
  f.set_image("b2", 1, move_image{{"b2-6", ended}});
  CHECK_FALSE(f.ensure(err, 0, "b2-6", 100));
  CHECK(error_code_of(err) == "stale_ensure");
  CHECK(message_of(err).find("metadata log has the move failed") != std::string::npos);
  // A late cleanup of the earlier move keeps the later move's copy.
  REQUIRE(f.append(err, 0, batch_of(2, "r")));
  CHECK_FALSE(f.cleanup(err, "b2-7"));
  CHECK(error_code_of(err) == "stale_cleanup");
  CHECK(http_status_of(err) == 409);
  auto kept = f.append(err, 0, batch_of(2, "r"));  // the copy still ends at 2
  CHECK_FALSE(kept);
  int64_t end = -1;
  CHECK(mismatch_log_end(err, end));
  CHECK(end == 2);
  // Its own cleanup discards it.
  auto cleaned = f.cleanup(err, "b2-8");
  REQUIRE(cleaned);
  CHECK(cleaned->log_end_offset == 0);
  // A source of an earlier version sends no move id: never refused as stale.
  CHECK(f.ensure(err, 0));
}

TEST_CASE("a repeated confirm of the same move is answered already confirmed, one after the source took the "
          "partition back is refused",
          "[move_destination]") {
  destination_fixture f;
  caf::error err;
  REQUIRE(f.ensure(err));
  REQUIRE(f.append(err, 0, batch_of(2, "r")));
  move_info m;
  m.tp = tp;
  m.from = "b2";
  m.to = "b1";
  m.state = "offsets";
  m.end = 2;
  m.epoch = 2;
  f.set_image("b1", 2, move_image{{"m1", m}});
  REQUIRE(f.confirm(err, 2, 2));
  // The answer was lost, and b1 took a write at the new epoch since: the
  // source's retry is answered as confirmed, with no second entry.
  CHECK(f.produce() == "2");
  auto again = f.confirm(err, 2, 2);
  REQUIRE(again);
  CHECK(again->already_confirmed);
  CHECK(again->log_end_offset == 3);
  CHECK(f.owner_entries().size() == 1);
}

TEST_CASE("a confirm after the source took the partition back is refused and leaves the copy sealed, for the "
          "source's cleanup to discard",
          "[move_destination]") {
  destination_fixture f;
  caf::error err;
  REQUIRE(f.ensure(err));
  REQUIRE(f.append(err, 0, batch_of(2, "r")));
  f.set_image("b1", 2);  // the cutover applied here
  // The source gave up waiting and took the partition back by its own
  // conditional entry at the cutover's epoch, ordered first in the log: the
  // destination's entry at that epoch is refused, and the move has ended.
  {
    std::lock_guard<std::mutex> g{f.entries->mtx};
    f.entries->taken_back_by = "b2";
  }
  CHECK_FALSE(f.confirm(err, 2, 2));
  CHECK(error_code_of(err) == "owner_changed");
  CHECK(f.owner_entries().empty());
  CHECK(f.image->owner_and_epoch(tp) == std::make_pair(std::string{"b2"}, int64_t{3}));
  CHECK(f.produce() == "partition_moved");
  // The source's retry, if any, is told to wait: the source owns it again.
  CHECK_FALSE(f.confirm(err, 2, 2));
  CHECK(error_code_of(err) == "not_ready");
  // The source's cleanup discards the copy and unseals it.
  auto cleaned = f.cleanup(err);
  REQUIRE(cleaned);
  CHECK(cleaned->log_end_offset == 0);
  CHECK(f.produce() == "0");
  // A partition owned by a third broker meanwhile: the move has ended.
  f.set_image("b3", 4);
  CHECK_FALSE(f.confirm(err, 0, 2));
  CHECK(error_code_of(err) == "owner_changed");
}

TEST_CASE("with shared storage a destination copies nothing: ensure only seals, append is refused",
          "[move_destination]") {
  destination_fixture f{true};
  caf::error err;
  // Ensure seals the partition and names no copy (nothing is reset: the
  // data is the shared directory's chain).
  auto ensured = f.ensure(err);
  REQUIRE(ensured);
  CHECK(ensured->copy_none);
  CHECK_FALSE(f.append(err, 0, batch_of(1, "r")));
  CHECK(error_code_of(err) == "shared_storage");
  CHECK(http_status_of(err) == 409);
}

TEST_CASE("a destination step on a partition it has no copy of is not found", "[move_destination]") {
  destination_fixture f;
  caf::error err;
  CHECK_FALSE(f.append(err, 0, batch_of(1, "r")));
  CHECK(error_code_of(err) == "unknown_partition");
  CHECK(http_status_of(err) == 404);
  CHECK_FALSE(f.confirm(err, 0, 2));
  CHECK(error_code_of(err) == "unknown_partition");
}
