// Partition log throughput against the disk's raw limit.
//
// Appends batches of `--batch-records` records with `--value-bytes` values,
// calling flush() (fdatasync) after every batch, and compares that with the
// raw limit measured in the same run: sequential write(2) of the same bytes
// to a file in the same directory with an fdatasync after each batch-sized
// chunk. Then reads the whole log back (page cache) with 1 MiB fetches.
// MB = 10^6 bytes. Rounds alternate the order of raw and log runs to share
// disk conditions; the best round of each is reported.
//
// Usage: storage_log_bench [--dir D] [--batches N] [--batch-records R]
//                          [--value-bytes V] [--rounds K]

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/common/raw_disk.hpp"
#include "storage/partition_log.hpp"
#include "storage/record_batch.hpp"
#include "util/logging.hpp"

namespace st = moonmq::storage;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
  std::string dir;
  int batches = 100;
  int batch_records = 1000;
  size_t value_bytes = 1024;
  int rounds = 2;
};

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string make_value(size_t n, uint64_t seed) {
  std::string v(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& c : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return v;
}

// The raw limit: bench/common/raw_disk.hpp.
double raw_write(const std::string& path, const std::string& chunk, int batches) {
  return moonmq::bench::raw_write_seconds(path, chunk, batches);
}

// Seconds to append `batches` copies of `batch` (offsets assigned by the
// log) with a flush after each, or negative on error.
double log_append(const std::string& dir, std::string batch, int batches) {
  st::log_config cfg;
  cfg.segment_bytes = 128u << 20;  // include segment rolls in the figure
  auto lg = st::partition_log::create(dir, st::offset{0}, cfg);
  if (!lg)
    return -1;
  auto t0 = clock_type::now();
  for (int b = 0; b < batches; ++b) {
    if (!lg->append(batch) || !lg->flush())
      return -1;
  }
  return seconds_since(t0);
}

int parse_args(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = next();
    if (!v) {
      std::fprintf(stderr, "missing value for %s\n", a.c_str());
      return 2;
    }
    if (a == "--dir") o.dir = v;
    else if (a == "--batches") o.batches = std::atoi(v);
    else if (a == "--batch-records") o.batch_records = std::atoi(v);
    else if (a == "--value-bytes") o.value_bytes = static_cast<size_t>(std::atol(v));
    else if (a == "--rounds") o.rounds = std::atoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.batches <= 0 || o.batch_records <= 0 || o.rounds <= 0) {
    std::fprintf(stderr, "counts must be positive\n");
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (int rc = parse_args(argc, argv, o); rc != 0)
    return rc;
  moonmq::log::set_level("warn");
  std::string base = o.dir.empty() ? std::filesystem::current_path().string() : o.dir;
  std::string work = base + "/moonmq-storage-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(work);

  // Encode one batch; measure encode throughput on the side.
  std::vector<st::record> records(static_cast<size_t>(o.batch_records));
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].key = "key-" + std::to_string(i);
    records[i].value = make_value(o.value_bytes, i);
    records[i].timestamp_ms = 1'700'000'000'000 + static_cast<int64_t>(i);
  }
  auto te = clock_type::now();
  const int encode_reps = 20;
  std::string batch;
  for (int i = 0; i < encode_reps; ++i)
    batch = st::encode_batch(records).value();
  double encode_s = seconds_since(te);

  const double total_records = static_cast<double>(o.batches) * o.batch_records;
  const double total_bytes = static_cast<double>(o.batches) * static_cast<double>(batch.size());
  double best_raw = 1e30;
  double best_log = 1e30;
  for (int r = 0; r < o.rounds; ++r) {
    // Alternate which goes first so background disk load hits both alike.
    double raw = 0;
    double lg = 0;
    if (r % 2 == 0) {
      raw = raw_write(work + "/raw.bin", batch, o.batches);
      lg = log_append(work + "/log-0", batch, o.batches);
    } else {
      lg = log_append(work + "/log-0", batch, o.batches);
      raw = raw_write(work + "/raw.bin", batch, o.batches);
    }
    if (raw < 0 || lg < 0) {
      std::fprintf(stderr, "I/O error in round %d\n", r);
      std::filesystem::remove_all(work);
      return 1;
    }
    best_raw = std::min(best_raw, raw);
    best_log = std::min(best_log, lg);
  }

  // Read back everything (page cache) with 1 MiB fetches.
  auto lg = st::partition_log::open(work + "/log-0").value();
  auto tr = clock_type::now();
  st::offset next = lg.log_start();
  double read_bytes = 0;
  double read_records = 0;
  while (next < lg.log_end()) {
    auto res = lg.read(next, 1 << 20);
    if (!res || res->batches.empty()) {
      std::fprintf(stderr, "read failed at %lld\n", static_cast<long long>(next.value));
      return 1;
    }
    std::string_view rest = res->batches;
    while (!rest.empty()) {
      auto info = st::peek_batch_header(rest).value();
      read_records += static_cast<double>(info.last.value - info.base.value + 1);
      next = st::offset{info.last.value + 1};
      rest.remove_prefix(info.size);
    }
    read_bytes += static_cast<double>(res->batches.size());
  }
  double read_s = seconds_since(tr);
  std::filesystem::remove_all(work);

  std::printf("storage_log_bench dir=%s batches=%d batch_records=%d value_bytes=%zu "
              "batch_bytes=%zu rounds=%d\n",
              base.c_str(), o.batches, o.batch_records, o.value_bytes, batch.size(), o.rounds);
  std::printf("raw write+fdatasync : %10.0f records/s %8.1f MB/s %7.1f fsync/s\n",
              total_records / best_raw, total_bytes / best_raw / 1e6, o.batches / best_raw);
  std::printf("log append+flush    : %10.0f records/s %8.1f MB/s %7.1f fsync/s  ratio=%.2f\n",
              total_records / best_log, total_bytes / best_log / 1e6, o.batches / best_log,
              best_raw / best_log);
  std::printf("encode (in memory)  : %10.0f records/s %8.1f MB/s\n",
              encode_reps * o.batch_records / encode_s,
              encode_reps * static_cast<double>(batch.size()) / encode_s / 1e6);
  std::printf("read (page cache)   : %10.0f records/s %8.1f MB/s\n", read_records / read_s,
              read_bytes / read_s / 1e6);
  return 0;
}
