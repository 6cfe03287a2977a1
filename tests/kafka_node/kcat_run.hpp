#pragma once
// kcat as the Kafka tests run it in the background (a producer fed through a
// fifo, a group consumer), and the readers of its output: what the tests of
// moves and failovers under real Kafka clients share.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/node/move_cluster.hpp"

namespace moonmq::test {

using kcat_clock = std::chrono::steady_clock;

/// kcat in the background: `exec kcat ARGS <in 2>err`, stdout to `out`. The
/// child is kcat itself (sh execs it), so it is stopped by its own pid.
struct kcat_run {
  std::string out;
  std::string err;
  child_process proc;

  kcat_run(const temp_dir& dir, const std::string& name, const std::string& args, const std::string& in = "/dev/null")
      : out(dir.path() + "/" + name + ".out"), err(dir.path() + "/" + name + ".err") {
    REQUIRE(proc.start("/bin/sh", {"-c", "exec kcat " + args + " <" + in + " 2>" + err}, out));
  }
  ~kcat_run() { stop(); }

  /// SIGTERM (kcat closes its consumer: commit, LeaveGroup), SIGKILL after 10 s.
  std::optional<int> stop() {
    if (auto rc = proc.wait(std::chrono::milliseconds(0)))
      return rc;
    proc.signal(SIGTERM);
    if (auto rc = proc.wait(std::chrono::seconds(10)))
      return rc;
    proc.signal(SIGKILL);
    return proc.wait(std::chrono::seconds(5));
  }
  std::string stdout_text() const { return read_text(out); }
  std::string stderr_text() const { return read_text(err); }
};

/// The number in a payload "m<i>-xxx…" (-1 when it is not one).
inline int message_number(const std::string& value) {
  if (value.size() < 2 || value[0] != 'm')
    return -1;
  auto dash = value.find('-');
  try {
    return std::stoi(value.substr(1, dash == std::string::npos ? std::string::npos : dash - 1));
  } catch (...) {
    return -1;
  }
}

/// Message i's payload. Each input line must be at least 128 bytes: kcat
/// 1.7.1 reads stdin with fread(128) before looking for a delimiter, so
/// shorter lines would sit in its buffer until more input (or EOF) arrives.
inline std::string payload(int i) {
  std::string v = "m" + std::to_string(i) + "-";
  v.resize(150, 'x');
  return v;
}

struct consumed_record {
  int32_t partition;
  int64_t offset;
  std::string value;
};

/// kcat -f '%p %o %s\n' output; only complete lines.
inline std::vector<consumed_record> parse_consumed(const std::string& text) {
  std::vector<consumed_record> out;
  size_t pos = 0;
  for (auto nl = text.find('\n', pos); nl != std::string::npos; pos = nl + 1, nl = text.find('\n', pos)) {
    std::istringstream in(text.substr(pos, nl - pos));
    consumed_record r;
    if (in >> r.partition >> r.offset >> r.value)
      out.push_back(std::move(r));
  }
  return out;
}

/// kcat -v -v delivery reports, in order: "% Message delivered to partition
/// P (offset O) on broker B".
inline std::vector<std::pair<int32_t, int64_t>> parse_delivered(const std::string& text) {
  std::vector<std::pair<int32_t, int64_t>> out;
  const std::string tag = "Message delivered to partition ";
  for (auto pos = text.find(tag); pos != std::string::npos; pos = text.find(tag, pos + 1)) {
    int p = -1;
    long long o = -1;
    if (std::sscanf(text.c_str() + pos + tag.size(), "%d (offset %lld)", &p, &o) == 2)
      out.emplace_back(p, o);
  }
  return out;
}

inline size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1))
    ++n;
  return n;
}

/// Opens the write end of `fifo` once its reader (kcat's shell) opened it.
inline int open_fifo_writer(const std::string& fifo, std::chrono::milliseconds timeout) {
  auto deadline = kcat_clock::now() + timeout;
  for (;;) {
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    if (errno != ENXIO || kcat_clock::now() >= deadline)
      return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

/// Checks the logs of a topic (partition → its records, read at the
/// owners) against kcat's delivery reports for messages 1..n: each message
/// is in the logs exactly once and nothing else is, each partition holds
/// its messages in produce order, and the offsets acknowledged per
/// partition are the log's offsets, in order.
inline void check_logs_hold_delivered(const std::map<int32_t, move::partition_read>& logs,
                                      const std::vector<std::pair<int32_t, int64_t>>& delivered, int n) {
  std::map<int, std::vector<std::pair<int32_t, int64_t>>> where;
  std::string log_dump;
  size_t records = 0;
  for (const auto& [p, log] : logs) {
    CHECK(log.log_start == 0);
    int last = 0;
    int out_of_order = 0;
    for (const auto& [off, rec] : log.records) {
      auto i = message_number(rec.value("value", ""));
      where[i].emplace_back(p, off);
      out_of_order += i <= last;
      last = std::max(last, i);
      if (log_dump.size() < 20000)
        log_dump += std::to_string(p) + "@" + std::to_string(off) + "=m" + std::to_string(i) + " ";
      ++records;
    }
    INFO("partition " << p << ": messages out of produce order (a reordered or duplicated retry)");
    CHECK(out_of_order == 0);
  }
  INFO("logs (partition@offset=message): " << log_dump);
  std::vector<int> lost, duplicated;
  for (int i = 1; i <= n; ++i) {
    auto it = where.find(i);
    if (it == where.end())
      lost.push_back(i);
    else if (it->second.size() > 1)
      duplicated.push_back(i);
  }
  INFO("lost: " << Catch::Detail::stringify(lost) << "\nduplicated: " << Catch::Detail::stringify(duplicated));
  CHECK(lost.empty());
  CHECK(duplicated.empty());
  CHECK(where.size() == static_cast<size_t>(n));
  CHECK(records == static_cast<size_t>(n));
  std::map<int32_t, std::vector<int64_t>> acked_offsets;
  for (auto [p, o] : delivered)
    acked_offsets[p].push_back(o);
  for (const auto& [p, log] : logs) {
    std::vector<int64_t> in_log;
    for (const auto& [off, rec] : log.records)
      in_log.push_back(off);
    INFO("partition " << p << ": acknowledged offsets vs the log's");
    CHECK(acked_offsets[p] == in_log);
  }
}

/// Feeds a kcat producer through its fifo `fd`: line i is "k<i>:payload(i)",
/// one every `every`, for i = 1 up to `stop_at` (lower it to end early),
/// then closes the fifo (EOF: kcat sends what it holds and exits). Left
/// unjoined (a failed REQUIRE), it kills `producer` first so that no write
/// blocks on a full fifo.
struct fifo_feed {
  std::atomic<int> written{0};
  std::atomic<int> stop_at;
  std::atomic<bool> write_failed{false};

  fifo_feed(int fd, kcat_run& producer, int max_messages, std::chrono::milliseconds every)
      : stop_at(max_messages), producer_(producer), thread_([this, fd, every] {
          for (int i = 1; i <= stop_at.load(); ++i) {
            std::string line = "k" + std::to_string(i) + ":" + payload(i) + "\n";
            if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
              write_failed = true;
              break;
            }
            written = i;
            std::this_thread::sleep_for(every);
          }
          ::close(fd);
        }) {}
  fifo_feed(const fifo_feed&) = delete;
  fifo_feed& operator=(const fifo_feed&) = delete;
  ~fifo_feed() {
    if (!thread_.joinable())
      return;
    stop_at = 0;
    producer_.proc.signal(SIGKILL);
    thread_.join();
  }
  /// Writes up to line `last` (or stops now when more were written), then joins.
  void finish_at(int last) {
    stop_at = last;
    thread_.join();
  }

 private:
  kcat_run& producer_;
  std::thread thread_;
};

}  // namespace moonmq::test
