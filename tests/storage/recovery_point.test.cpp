// The recovery-point checkpoint file: its line format and the damage it
// refuses to decode.
#include "storage/recovery_point.hpp"

#include <catch2/catch.hpp>

#include <fstream>

#include "storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;

TEST_CASE("a recovery checkpoint round-trips through its line", "[storage][checkpoint]") {
  for (auto cp : {recovery_checkpoint{offset{0}, false}, recovery_checkpoint{offset{4210}, true},
                  recovery_checkpoint{offset{INT64_MAX}, false}}) {
    auto line = encode_recovery_checkpoint(cp);
    CHECK(line.rfind("moonmq-recovery-point v1 offset=", 0) == 0);
    CHECK(line.back() == '\n');
    auto back = decode_recovery_checkpoint(line);
    REQUIRE(back);
    CHECK(back->point == cp.point);
    CHECK(back->clean == cp.clean);
  }
  CHECK(encode_recovery_checkpoint({offset{42}, true}).substr(0, 49) ==
        "moonmq-recovery-point v1 offset=42 clean=1 crc32c");
}

TEST_CASE("a changed, cut or extended checkpoint line does not decode", "[storage][checkpoint]") {
  const auto line = encode_recovery_checkpoint({offset{123456}, false});
  for (size_t i = 0; i < line.size(); ++i) {
    for (char flip : {'\x01', '\x20'}) {
      auto bad = line;
      bad[i] = static_cast<char>(bad[i] ^ flip);
      INFO("byte " << i << " ^ " << int(flip));
      CHECK_FALSE(decode_recovery_checkpoint(bad));
    }
  }
  for (size_t n = 0; n < line.size(); ++n)
    CHECK_FALSE(decode_recovery_checkpoint(line.substr(0, n)));
  CHECK_FALSE(decode_recovery_checkpoint(line + "x"));
  CHECK_FALSE(decode_recovery_checkpoint(""));
}

TEST_CASE("reading a directory's checkpoint tells missing, valid and unreadable apart", "[storage][checkpoint]") {
  temp_dir tmp;
  auto dir = tmp.path();
  CHECK(read_recovery_checkpoint(dir).value().state == loaded_checkpoint::kind::missing);
  REQUIRE(write_recovery_checkpoint(dir, {offset{7}, true}).ok());
  auto got = read_recovery_checkpoint(dir).value();
  CHECK(got.state == loaded_checkpoint::kind::valid);
  CHECK(got.value.point == offset{7});
  CHECK(got.value.clean);
  {
    std::ofstream f(dir + "/" + recovery_point_file_name, std::ios::trunc);
    f << "garbage";
  }
  CHECK(read_recovery_checkpoint(dir).value().state == loaded_checkpoint::kind::unreadable);
  REQUIRE(remove_recovery_checkpoint(dir).ok());
  CHECK(read_recovery_checkpoint(dir).value().state == loaded_checkpoint::kind::missing);
  CHECK(remove_recovery_checkpoint(dir).ok());
}
