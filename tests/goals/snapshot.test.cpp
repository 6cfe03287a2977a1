#include <catch2/catch.hpp>

#include "goals/snapshot.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::broker;
using moonmq::test::replica;

namespace {

cluster_model three_brokers() {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3", false)};
  m.replicas = {replica("t", 0, "b1", 10, 1, 100), replica("t", 1, "b1", 20, 2, 200), replica("u", 0, "b2", 5, 3, 50),
                replica("__internal", 0, "b2", 7, 0, 0)};
  m.excluded_topics = {"u"};
  return m;
}

}  // namespace

TEST_CASE("freeze sums replica loads per broker and over eligible brokers", "[snapshot]") {
  auto s = snapshot::freeze(three_brokers());
  REQUIRE(s.ok());
  const auto b1 = *s->find_broker("b1");
  const auto b2 = *s->find_broker("b2");
  CHECK(s->load(b1, resource::nw_in) == 30.0);
  CHECK(s->load(b1, resource::partition_count) == 2.0);
  CHECK(s->load(b2, resource::nw_in) == 12.0);
  CHECK(s->eligible_count() == 2);  // b3 is dead
  CHECK(s->eligible_total(resource::disk) == 350.0);
  CHECK_FALSE(s->eligible(*s->find_broker("b3")));
}

TEST_CASE("internal and excluded topics are immovable", "[snapshot]") {
  auto s = snapshot::freeze(three_brokers());
  REQUIRE(s.ok());
  CHECK(s->movable(*s->find_replica("t", 0)));
  CHECK_FALSE(s->movable(*s->find_replica("u", 0)));
  CHECK_FALSE(s->movable(*s->find_replica("__internal", 0)));
}

TEST_CASE("apply and undo of a MOVE keep broker totals exact", "[snapshot]") {
  auto s = snapshot::freeze(three_brokers());
  REQUIRE(s.ok());
  const auto b1 = *s->find_broker("b1"), b2 = *s->find_broker("b2");
  const auto r = *s->find_replica("t", 1);
  const action a{action_type::move, r, b1, b2, {}};
  REQUIRE(s->apply(a));
  CHECK(s->owner(r) == b2);
  CHECK(s->load(b1, resource::nw_in) == 10.0);
  CHECK(s->load(b2, resource::nw_in) == 32.0);
  CHECK(s->load(b2, resource::partition_count) == 3.0);
  CHECK(s->moved_count() == 1);
  CHECK_FALSE(s->apply(a));  // owner is no longer b1
  REQUIRE(s->undo(a));
  CHECK(s->owner(r) == b1);
  CHECK(s->load(b1, resource::nw_in) == 30.0);
  CHECK(s->load(b2, resource::nw_in) == 12.0);
  CHECK(s->moved_count() == 0);
  CHECK_FALSE(s->undo(a));
}

TEST_CASE("apply and undo of a SWAP exchange two replicas", "[snapshot]") {
  auto s = snapshot::freeze(three_brokers());
  REQUIRE(s.ok());
  const auto b1 = *s->find_broker("b1"), b2 = *s->find_broker("b2");
  const auto r = *s->find_replica("t", 0), o = *s->find_replica("u", 0);
  const action a{action_type::swap, r, b1, b2, o};
  REQUIRE(s->apply(a));
  CHECK(s->owner(r) == b2);
  CHECK(s->owner(o) == b1);
  CHECK(s->load(b1, resource::disk) == 250.0);
  CHECK(s->load(b2, resource::disk) == 100.0);
  CHECK(s->load(b1, resource::partition_count) == 2.0);
  CHECK(s->moved_count() == 2);
  REQUIRE(s->undo(a));
  CHECK(s->load(b1, resource::disk) == 300.0);
  CHECK(s->moved_count() == 0);
  const action bad{action_type::swap, r, b1, b2, *s->find_replica("t", 1)};  // other is not on b2
  CHECK_FALSE(s->apply(bad));
  CHECK(s->load(b1, resource::disk) == 300.0);
}

TEST_CASE("freeze applies in-flight moves and marks them and cooldown immovable", "[snapshot]") {
  auto m = three_brokers();
  m.in_flight = {{{"t", 0}, "b2"}};
  m.cooldown = {{"t", 1}, {"gone", 9}};
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  const auto r0 = *s->find_replica("t", 0);
  CHECK(s->owner(r0) == *s->find_broker("b2"));
  CHECK(s->origin(r0) == *s->find_broker("b2"));
  CHECK(s->load(*s->find_broker("b2"), resource::nw_in) == 22.0);
  CHECK_FALSE(s->movable(r0));
  CHECK_FALSE(s->movable(*s->find_replica("t", 1)));
}

TEST_CASE("freeze indexes avoided destinations and ignores unknown partitions and brokers", "[snapshot]") {
  auto m = three_brokers();
  using moonmq::test::avoid;
  m.avoid = {avoid("t", 0, "b2"), avoid("t", 0, "b2"), avoid("t", 1, "b9"), avoid("gone", 3, "b1"),
             avoid("u", 0, "b1")};
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  const auto b1 = *s->find_broker("b1"), b2 = *s->find_broker("b2"), b3 = *s->find_broker("b3");
  const auto t0 = *s->find_replica("t", 0), t1 = *s->find_replica("t", 1), u0 = *s->find_replica("u", 0);
  CHECK(s->avoided(t0, b2));
  CHECK_FALSE(s->avoided(t0, b1));
  CHECK_FALSE(s->avoided(t0, b3));
  CHECK_FALSE(s->avoided(t1, b1));
  CHECK_FALSE(s->avoided(t1, b2));
  CHECK(s->avoided(u0, b1));
  CHECK_FALSE(s->avoided(u0, b2));
  CHECK(s->movable(t0));  // avoiding a broker does not pin the partition
}

TEST_CASE("freeze refuses inconsistent models with a precise error", "[snapshot]") {
  auto m = three_brokers();
  m.replicas[2].owner = "b9";
  auto s = snapshot::freeze(m);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error() == "partitions[2].owner: unknown broker \"b9\"");

  m = three_brokers();
  m.replicas.push_back(replica("t", 1, "b2"));
  CHECK(validate(m).find("duplicate partition t-1") != std::string::npos);

  m = three_brokers();
  m.brokers.push_back(broker("b1"));
  CHECK(validate(m).find("duplicate broker") != std::string::npos);

  m = three_brokers();
  m.replicas[0].load[2] = -1.0;
  CHECK(validate(m).find("partitions[0].load.disk") != std::string::npos);

  m = three_brokers();
  m.in_flight = {{{"t", 0}, "nowhere"}};
  CHECK(validate(m).find("in_flight[0].to") != std::string::npos);
  CHECK(validate(three_brokers()).empty());
}

TEST_CASE("untrusted replicas carry no load and never move", "[snapshot]") {
  auto m = three_brokers();
  m.replicas[0].trusted = false;
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  const auto r = *s->find_replica("t", 0);
  CHECK_FALSE(s->movable(r));
  CHECK(s->load(r, resource::nw_in) == 0.0);
  CHECK(s->load(r, resource::partition_count) == 1.0);
}
