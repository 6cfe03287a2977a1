// util::fan_in: `done` runs once, after the last part, with every part's
// change, whatever thread each part arrives on; at once with no parts; and
// a part past the last changes nothing.

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "util/fan_in.hpp"

using moonmq::util::fan_in;

TEST_CASE("fan_in: done runs once after the last part, with every part's answer", "[util]") {
  int calls = 0;
  std::vector<int> seen;
  auto in = fan_in<std::vector<int>>::make(8, std::vector<int>(8, -1), [&](std::vector<int>& all) {
    ++calls;
    seen = all;
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([in, i] { in->add([i](std::vector<int>& all) { all[static_cast<size_t>(i)] = i * i; }); });
  for (auto& t : threads)
    t.join();
  CHECK(calls == 1);
  REQUIRE(seen.size() == 8);
  for (int i = 0; i < 8; ++i)
    CHECK(seen[static_cast<size_t>(i)] == i * i);
  in->add([](std::vector<int>& all) { all[0] = 99; });  // past the last: ignored, done not run again
  CHECK(calls == 1);
}

TEST_CASE("fan_in: with no parts done runs at once, and a done holding the fan-in frees it", "[util]") {
  int calls = 0;
  auto none = fan_in<int>::make(0, 7, [&](int& v) { calls += v; });
  CHECK(calls == 7);

  // A done that holds the fan-in (as a lambda capturing it does) would keep
  // it alive for good if it stayed stored after running.
  std::weak_ptr<fan_in<int>> weak;
  {
    auto holder = std::make_shared<std::shared_ptr<fan_in<int>>>();
    auto in = fan_in<int>::make(1, 0, [holder, &calls](int& v) { calls += v; });
    *holder = in;  // done → holder → the fan-in → done: a cycle until done runs
    weak = in;
    in->add([](int& v) { v = 1; });
  }
  CHECK(calls == 8);
  CHECK(weak.expired());
}
