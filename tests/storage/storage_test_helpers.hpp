#pragma once
// Shared fixtures for the storage tests: a temporary directory that cleans
// up after itself and deterministic record/batch builders.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/partition_log.hpp"
#include "storage/record_batch.hpp"

namespace moonmq::storage::test {

/// mkdtemp-created directory, removed recursively on destruction.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moonmq-storage-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Deterministic pseudo-random bytes (xorshift), all 256 byte values occur.
inline std::string pseudo_bytes(size_t n, uint64_t seed) {
  std::string out(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& c : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x & 0xff);
  }
  return out;
}

/// `n` records; record i of batch `seed` has value "v<seed>-<i>" + padding
/// bytes, a key on odd i, one header on every third record.
inline std::vector<record> make_records(int n, int seed, size_t pad = 0, int64_t ts = 1000) {
  std::vector<record> out;
  for (int i = 0; i < n; ++i) {
    record r;
    if (i % 2 == 1)
      r.key = "k" + std::to_string(seed) + "-" + std::to_string(i);
    r.value = "v" + std::to_string(seed) + "-" + std::to_string(i) +
              pseudo_bytes(pad, static_cast<uint64_t>(seed * 1000 + i));
    if (i % 3 == 0)
      r.headers.push_back({"h", std::string("x")});
    r.timestamp_ms = ts + i;
    out.push_back(std::move(r));
  }
  return out;
}

inline std::string make_batch(int n, int seed, size_t pad = 0, int64_t ts = 1000) {
  return encode_batch(make_records(n, seed, pad, ts)).value();
}

/// Small segments (1 KiB) with an index entry every 256 bytes, so a few
/// batches fill a segment.
inline log_config one_kib_segments() {
  log_config c;
  c.segment_bytes = 1024;
  c.index_interval_bytes = 256;
  return c;
}

/// Every record value readable from `lg` starting at log-start, in order,
/// with its offset; reads with `max_bytes` per call.
inline std::vector<std::pair<int64_t, std::string>> read_all(partition_log& lg,
                                                             size_t max_bytes = 1 << 20) {
  std::vector<std::pair<int64_t, std::string>> out;
  offset next = lg.log_start();
  while (next < lg.log_end()) {
    auto r = lg.read(next, max_bytes);
    if (!r || r->batches.empty())
      break;
    std::string_view rest = r->batches;
    while (!rest.empty()) {
      auto view = batch_view::parse(rest).value();
      auto records = decode_records(view).value();
      for (auto& rec : records) {
        if (rec.off >= next)
          out.emplace_back(rec.off.value, std::string(rec.value.value_or("")));
      }
      next = offset{view.last_offset().value + 1};
      rest.remove_prefix(view.size());
    }
  }
  return out;
}

}  // namespace moonmq::storage::test
