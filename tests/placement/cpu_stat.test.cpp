#include <catch2/catch.hpp>

#include "placement/cpu_stat.hpp"

using namespace moonmq::placement;

namespace {

// A real /proc/self/stat line (Linux 6.1), command name with a space and a ')'.
const char* const self_stat =
  "4242 (moon mq) node) S 1 4242 4242 0 -1 4194560 2155 0 0 0 731 269 0 0 20 0 6 0 123456 "
  "300000000 5000 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0";

const char* const proc_stat =
  "cpu  1000 50 300 8000 100 20 30 0 0 0\n"
  "cpu0 500 25 150 4000 50 10 15 0 0 0\n"
  "cpu1 500 25 150 4000 50 10 15 0 0 0\n"
  "intr 12345\n";

}  // namespace

TEST_CASE("placement cpu: utime and stime are read after the last parenthesis", "[placement][cpu]") {
  auto t = parse_process_stat(self_stat);
  REQUIRE(t.ok());
  CHECK(*t == 731 + 269);
}

TEST_CASE("placement cpu: a truncated or garbled process stat names the field", "[placement][cpu]") {
  CHECK(parse_process_stat("4242 node S 1 2 3").err().field == "comm");
  auto short_line = parse_process_stat("4242 (node) S 1 2 3");
  REQUIRE_FALSE(short_line.ok());
  CHECK(short_line.err().field == "utime");
  auto garbled = parse_process_stat("1 (n) S 1 1 1 0 -1 0 0 0 0 0 x7 9 0");
  REQUIRE_FALSE(garbled.ok());
  CHECK(garbled.err().field == "utime");
  CHECK(parse_process_stat("").err().field == "comm");
}

TEST_CASE("placement cpu: the aggregate cpu line of proc stat gives total and idle ticks", "[placement][cpu]") {
  auto t = parse_machine_stat(proc_stat);
  REQUIRE(t.ok());
  CHECK(t->machine_total == 1000 + 50 + 300 + 8000 + 100 + 20 + 30 + 0);
  CHECK(t->machine_idle == 8000 + 100);
  // An old kernel's 4 counters; the aggregate line found after other lines.
  auto old = parse_machine_stat("intr 1\ncpu 10 0 10 80\n");
  REQUIRE(old.ok());
  CHECK(old->machine_total == 100);
  CHECK(old->machine_idle == 80);
}

TEST_CASE("placement cpu: a proc stat without a usable cpu line is refused", "[placement][cpu]") {
  CHECK(parse_machine_stat("").err().field == "cpu");
  CHECK(parse_machine_stat("cpu0 1 2 3 4\n").err().field == "cpu");
  CHECK(parse_machine_stat("cpu 1 2 3\n").err().field == "cpu");
  CHECK(parse_machine_stat("cpu 1 2 x 4\n").err().field == "cpu");
}

TEST_CASE("placement cpu: fractions between two readings of the machine", "[placement][cpu]") {
  cpu_ticks a{100, 10'000, 8'000};
  cpu_ticks b{150, 11'000, 8'600};  // 1000 ticks: 400 busy, 50 of them this process
  auto load = cpu_between(a, b);
  CHECK(load.process == Approx(0.05));
  CHECK(load.machine == Approx(0.4));
}

TEST_CASE("placement cpu: no elapsed ticks or counters going backwards give 0 never NaN", "[placement][cpu]") {
  cpu_ticks a{100, 10'000, 8'000};
  auto same = cpu_between(a, a);
  CHECK(same.process == 0);
  CHECK(same.machine == 0);
  auto back = cpu_between(a, cpu_ticks{50, 9'000, 7'000});
  CHECK(back.process == 0);
  CHECK(back.machine == 0);
  // The process counter reset (a new process) but the machine went on.
  auto reset = cpu_between(a, cpu_ticks{10, 11'000, 8'500});
  CHECK(reset.process == 0);
  CHECK(reset.machine == Approx(0.5));
  // Process ticks above the machine's (files read at different instants): clamped.
  auto over = cpu_between(a, cpu_ticks{2'000, 10'100, 8'000});
  CHECK(over.process == 1.0);
  CHECK(over.machine == 1.0);
}
