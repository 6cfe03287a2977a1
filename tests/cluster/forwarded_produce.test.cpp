#include <catch2/catch.hpp>

#include "cluster/forwarded_produce.hpp"

using namespace moonmq::cluster;

namespace {

std::string frame(uint32_t partition, uint32_t length, std::string_view bytes) {
  std::string out;
  for (auto v : {partition, length})
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>(v >> shift));
  out += bytes;
  return out;
}

}  // namespace

TEST_CASE("forwarded parts keep their order, bytes and repeats through the body", "[cluster][forwarded_produce]") {
  std::vector<forwarded_part> sent{{7, std::string("\x00\x01\xff", 3)}, {0, ""}, {7, "second"}, {999, "x"}};
  auto body = encode_forwarded_parts(sent);
  CHECK(body.size() == 4 * 8 + 3 + 0 + 6 + 1);
  CHECK(body.substr(0, 8) == frame(7, 3, ""));
  std::vector<forwarded_part> got;
  REQUIRE(decode_forwarded_parts(body, got).empty());
  REQUIRE(got.size() == 4);
  for (size_t i = 0; i < sent.size(); ++i) {
    CHECK(got[i].partition == sent[i].partition);
    CHECK(got[i].batch == sent[i].batch);
  }
}

TEST_CASE("a malformed forwarded body is refused whole, naming the part", "[cluster][forwarded_produce]") {
  std::vector<forwarded_part> got{{1, "stale"}};
  CHECK(decode_forwarded_parts("", got) == "the body holds no part");
  CHECK(got.empty());
  auto good = frame(1, 2, "ab");
  CHECK(decode_forwarded_parts(good + std::string(5, '\0'), got) == "part 1 at byte 10: cut short in its 8-byte header");
  CHECK(got.empty());
  CHECK(decode_forwarded_parts(good + frame(2, 3, "ab"), got)
        == "part 1 at byte 10: its batch of 3 bytes runs past the body's end");
  CHECK(decode_forwarded_parts(frame(0x80000000u, 0, ""), got) == "part 0 at byte 0: negative partition -2147483648");
  CHECK(decode_forwarded_parts(frame(3, 0xffffffffu, ""), got) == "part 0 at byte 0: negative length -1");
  CHECK(got.empty());
}

TEST_CASE("forwarded answers carry each part's offset or refusal in order", "[cluster][forwarded_produce]") {
  std::vector<int32_t> parts{0, 1, 2};
  std::vector<forwarded_answer> answers(3);
  answers[0] = {0, 200, 41, "", "", ""};
  answers[1] = {1, 421, -1, "not_owner", "owned elsewhere", "b3"};
  answers[2] = {2, 503, -1, "partition_offline", "offline", ""};
  auto body = encode_forwarded_answers(answers);
  CHECK(body.find("\"owner\":\"b3\"") != std::string::npos);
  std::vector<forwarded_answer> got;
  REQUIRE(decode_forwarded_answers(body, parts, got).empty());
  REQUIRE(got.size() == 3);
  CHECK(got[0].status == 200);
  CHECK(got[0].base_offset == 41);
  CHECK(got[1].status == 421);
  CHECK(got[1].error == "not_owner");
  CHECK(got[1].owner == "b3");
  CHECK(got[1].base_offset == -1);
  CHECK(got[2].status == 503);
  CHECK(got[2].message == "offline");
  CHECK(got[2].owner.empty());
}

TEST_CASE("an answer that does not fit the request is refused whole", "[cluster][forwarded_produce]") {
  std::vector<int32_t> parts{0, 5};
  std::vector<forwarded_answer> got;
  CHECK(decode_forwarded_answers("not json", parts, got) == "the answer is not {\"parts\":[...]}");
  CHECK(decode_forwarded_answers(R"({"parts":[{"partition":0,"base_offset":1}]})", parts, got)
        == "the answer has 1 parts for 2 sent");
  CHECK(decode_forwarded_answers(R"({"parts":[{"partition":0,"base_offset":1},{"partition":4,"base_offset":2}]})",
                                 parts, got)
        == "answer part 1: not an entry for partition 5");
  CHECK(decode_forwarded_answers(R"({"parts":[{"partition":0,"base_offset":1},{"partition":5}]})", parts, got)
        == "answer part 1: appended without a base offset");
  CHECK(decode_forwarded_answers(R"({"parts":[{"partition":0,"status":42},{"partition":5,"base_offset":2}]})", parts,
                                 got)
        == "answer part 0: status is not an HTTP status");
  CHECK(got.empty());
}
