// Deterministic fuzzing of the decoder: random frames, mutated valid frames
// and mutated batches go through frame_decoder, decode_request and
// validate_produce_records. The property: no crash, no read out of bounds
// (the suite runs under ASan/UBSan in CI), an error value or a request that
// re-encodes. Set MOONMQ_FUZZ_SEED to replay a failing seed (printed by
// Catch on failure).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "kafka/codec.hpp"
#include "kafka/produce_validation.hpp"
#include "samples.hpp"

using namespace moonmq::kafka;
using moonmq::kafka::test::sample_batch;
using moonmq::kafka::test::sample_requests;

namespace {

uint64_t base_seed() {
  if (const char* s = std::getenv("MOONMQ_FUZZ_SEED"))
    return std::strtoull(s, nullptr, 10);
  return 0x6b61666b61ull;  // "kafka"
}

// Every supported request at every advertised version, framed.
std::vector<std::string> valid_frames() {
  std::vector<std::string> out;
  for (const auto& body : sample_requests()) {
    auto r = *supported_range(static_cast<int16_t>(key_of(body)));
    for (int16_t v = r.min_version; v <= r.max_version; ++v) {
      request_header h;
      h.api_version = v;
      h.correlation_id = v;
      h.client_id = "fuzz";
      out.push_back(encode_request(h, body).value());
    }
  }
  return out;
}

// One of: flip bits, overwrite bytes with edge values, insert/delete a run,
// truncate, duplicate a slice — the shapes that break length prefixes.
std::string mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int rounds = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < rounds; ++i) {
    switch (rng() % 6) {
      case 0:
        if (!s.empty())
          s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1: {
        static const unsigned char edges[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
        if (!s.empty())
          s[pick(s.size())] = static_cast<char>(edges[rng() % 6]);
        break;
      }
      case 2: {
        std::string run(1 + pick(8), '\0');
        for (auto& c : run)
          c = static_cast<char>(rng());
        s.insert(pick(s.size() + 1), run);
        break;
      }
      case 3:
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.erase(at, 1 + pick(8));
        }
        break;
      case 4:
        s.resize(pick(s.size() + 1));
        break;
      case 5:
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.insert(pick(s.size() + 1), s.substr(at, 1 + pick(16)));
        }
        break;
    }
  }
  return s;
}

// Decodes one frame body; a success must re-encode without error.
void exercise(std::string_view frame) {
  auto req = decode_request(frame);
  if (req.ok()) {
    auto again = encode_request(req->header, req->body);
    CHECK(again.ok());
    // Produce records go through batch validation as the listener would.
    if (auto* p = std::get_if<produce_request>(&req->body))
      for (const auto& t : p->topics)
        for (const auto& part : t.partitions)
          (void)validate_produce_records(part.records ? std::optional<std::string_view>(*part.records)
                                                      : std::nullopt);
  } else {
    (void)error_response_frame(req.err());
  }
}

}  // namespace

TEST_CASE("kafka fuzz: random bytes never crash the frame decoder", "[kafka][fuzz]") {
  const uint64_t seed = base_seed();
  INFO("seed=" << seed << " (replay with MOONMQ_FUZZ_SEED)");
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 3000; ++i) {
    std::string blob(rng() % 64, '\0');
    for (auto& c : blob)
      c = static_cast<char>(rng());
    exercise(blob);
    frame_decoder d(4096);
    d.feed(blob);
    for (int n = 0; n < 8; ++n) {
      auto f = d.next();
      if (!f.ok() || !*f)
        break;
      exercise(**f);
    }
  }
}

TEST_CASE("kafka fuzz: mutated valid frames give errors or valid requests", "[kafka][fuzz]") {
  const auto frames = valid_frames();
  REQUIRE(frames.size() > 40);
  const uint64_t seed = base_seed() + 1;
  INFO("seed=" << seed << " (replay with MOONMQ_FUZZ_SEED=" << seed - 1 << ")");
  std::mt19937_64 rng(seed);
  size_t ok = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto& frame = frames[rng() % frames.size()];
    auto body = mutate(frame.substr(4), rng);
    INFO("iteration " << i);
    exercise(body);
    auto r = decode_request(body);
    ok += r.ok() ? 1 : 0;
  }
  // Some mutations keep the request valid (values, not lengths, changed).
  CHECK(ok > 0);
}

TEST_CASE("kafka fuzz: a mutated stream fed in random chunks", "[kafka][fuzz]") {
  const auto frames = valid_frames();
  const uint64_t seed = base_seed() + 2;
  INFO("seed=" << seed << " (replay with MOONMQ_FUZZ_SEED=" << seed - 2 << ")");
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 300; ++round) {
    std::string stream;
    for (int n = 0; n < 10; ++n) {
      const auto& f = frames[rng() % frames.size()];
      stream += (rng() % 4 == 0) ? mutate(f, rng) : f;
    }
    frame_decoder d(1 << 16);
    size_t pos = 0;
    bool broken = false;
    while (pos < stream.size() && !broken) {
      size_t chunk = 1 + rng() % 64;
      d.feed(std::string_view(stream).substr(pos, chunk));
      pos += chunk;
      for (;;) {
        auto f = d.next();
        if (!f.ok()) {
          broken = true;  // the listener closes the connection here
          CHECK(d.failed());
          break;
        }
        if (!*f)
          break;
        exercise(**f);
      }
    }
  }
}

TEST_CASE("kafka fuzz: mutated record batches never crash validation", "[kafka][fuzz]") {
  const uint64_t seed = base_seed() + 3;
  INFO("seed=" << seed << " (replay with MOONMQ_FUZZ_SEED=" << seed - 3 << ")");
  std::mt19937_64 rng(seed);
  const std::string batches[] = {sample_batch(), sample_batch(7, 100), sample_batch() + sample_batch()};
  size_t refused = 0;
  for (int i = 0; i < 5000; ++i) {
    auto b = mutate(batches[rng() % 3], rng);
    produce_validation_options opts;
    opts.single_batch = rng() % 2 == 0;
    auto r = validate_produce_records(std::string_view(b), opts);
    if (!r.ok()) {
      ++refused;
      CHECK(r.err().code == errc::invalid_batch);
      CHECK((r.err().kafka_code == error_code::invalid_record ||
             r.err().kafka_code == error_code::message_too_large ||
             r.err().kafka_code == error_code::unsupported_compression_type));
    } else {
      size_t total = 0;
      for (const auto& info : *r)
        total += info.bytes.size();
      CHECK(total == b.size());
    }
  }
  CHECK(refused > 4000);  // nearly every mutation breaks the CRC or a length
}
