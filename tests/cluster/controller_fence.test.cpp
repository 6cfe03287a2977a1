#include <catch2/catch.hpp>

#include <fstream>

#include "cluster/controller_fence.hpp"
#include "tests/support/process.hpp"

using namespace moonmq::cluster;
using moonmq::test::temp_dir;

namespace {

std::string file_in(const temp_dir& dir) {
  return dir.path() + "/" + controller_fence::file_name;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << text;
}

}  // namespace

TEST_CASE("a fresh fence has seen no controller", "[cluster][fence]") {
  temp_dir dir;
  auto f = controller_fence::open(dir.path());
  REQUIRE(f.ok());
  CHECK(f->highest() == epoch{0});
  CHECK(f->holder().empty());
}

TEST_CASE("claim takes highest + 1 and persists it before returning", "[cluster][fence]") {
  temp_dir dir;
  {
    auto f = controller_fence::open(dir.path());
    REQUIRE(f.ok());
    auto e1 = f->claim(broker_id{"b1"});
    REQUIRE(e1.ok());
    CHECK(*e1 == epoch{1});
    REQUIRE(f->observe(epoch{5}, broker_id{"b2"}).ok());
    auto e6 = f->claim(broker_id{"b1"});
    REQUIRE(e6.ok());
    CHECK(*e6 == epoch{6});
  }
  auto f = controller_fence::open(dir.path());
  REQUIRE(f.ok());
  CHECK(f->highest() == epoch{6});
  CHECK(f->holder() == broker_id{"b1"});
  CHECK(f->claim(broker_id{""}).err().code == errc::invalid_argument);
}

TEST_CASE("observe raises on a newer epoch and persists it", "[cluster][fence]") {
  temp_dir dir;
  {
    auto f = controller_fence::open(dir.path());
    REQUIRE(f.ok());
    auto r = f->observe(epoch{3}, broker_id{"b2"});
    REQUIRE(r.ok());
    CHECK(*r == observe_outcome::raised);
    auto same = f->observe(epoch{3}, broker_id{"b2"});
    REQUIRE(same.ok());
    CHECK(*same == observe_outcome::current);
  }
  auto f = controller_fence::open(dir.path());
  REQUIRE(f.ok());
  CHECK(f->highest() == epoch{3});
  CHECK(f->holder() == broker_id{"b2"});
}

TEST_CASE("a stale epoch is refused with the highest epoch and its holder", "[cluster][fence]") {
  temp_dir dir;
  auto f = controller_fence::open(dir.path());
  REQUIRE(f.ok());
  REQUIRE(f->observe(epoch{7}, broker_id{"b3"}).ok());
  auto r = f->observe(epoch{6}, broker_id{"b1"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.err().code == errc::stale_epoch);
  CHECK(r.err().highest == epoch{7});
  CHECK(r.err().holder == broker_id{"b3"});
  CHECK(http_status(r.err().code) == 409);
  CHECK(f->highest() == epoch{7});
}

TEST_CASE("the same epoch from another controller is a conflict", "[cluster][fence]") {
  temp_dir dir;
  auto f = controller_fence::open(dir.path());
  REQUIRE(f.ok());
  auto mine = f->claim(broker_id{"b1"});
  REQUIRE(mine.ok());
  auto r = f->observe(*mine, broker_id{"b2"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.err().code == errc::epoch_conflict);
  CHECK(r.err().holder == broker_id{"b1"});
  CHECK(r.err().highest == *mine);
  CHECK(f->holder() == broker_id{"b1"});
}

TEST_CASE("epoch 0 and bad ids are not claims", "[cluster][fence]") {
  temp_dir dir;
  auto f = controller_fence::open(dir.path());
  REQUIRE(f.ok());
  CHECK(f->observe(epoch{0}, broker_id{"b1"}).err().code == errc::invalid_argument);
  CHECK(f->observe(epoch{1}, broker_id{"b 1"}).err().code == errc::invalid_argument);
  CHECK(f->highest() == epoch{0});
}

TEST_CASE("a corrupt epoch file is refused with the file named", "[cluster][fence]") {
  const char* bad[] = {
      "",
      "{\"version\":1,\"epoch\":",
      "{\"version\":1,\"epoch\":-1,\"controller\":\"b1\"}",
      "{\"version\":1,\"epoch\":3}",
      "{\"version\":1,\"epoch\":3,\"controller\":\"\"}",
      "{\"version\":9,\"epoch\":3,\"controller\":\"b1\"}",
  };
  for (const char* text : bad) {
    temp_dir dir;
    write_text(file_in(dir), text);
    INFO("file contents: " << text);
    auto f = controller_fence::open(dir.path());
    REQUIRE_FALSE(f.ok());
    CHECK(f.err().code == errc::corrupt_state);
    CHECK_THAT(f.err().message, Catch::Contains(file_in(dir)));
  }
}

TEST_CASE("a torn temp file of the fence is ignored", "[cluster][fence]") {
  temp_dir dir;
  {
    auto f = controller_fence::open(dir.path());
    REQUIRE(f.ok());
    REQUIRE(f->claim(broker_id{"b1"}).ok());
  }
  write_text(file_in(dir) + ".tmp", "{\"version\":1,\"epo");
  auto f = controller_fence::open(dir.path());
  REQUIRE(f.ok());
  CHECK(f->highest() == epoch{1});
}
