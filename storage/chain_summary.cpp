#include "storage/chain_summary.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include "storage/binary_codec.hpp"
#include "storage/record_batch.hpp"
#include "storage/segment.hpp"
#include "util/atomic_file.hpp"
#include "util/logging.hpp"

namespace moonmq::storage {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view magic = "MQCHAIN1";

std::string epoch_name(uint64_t epoch) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(epoch));
  return buf;
}

/// `<root>/e<epoch>`, the directory a chain segment of `epoch` lives in.
std::string epoch_dir(const std::string& root, uint64_t epoch) { return root + "/e" + epoch_name(epoch); }

/// The epoch of a segment directory `<root>/e<20 digits>`; nullopt for any other.
std::optional<uint64_t> epoch_of_dir(const std::string& root, const std::string& dir) {
  const auto head = root + "/e";
  if (dir.size() != head.size() + 20 || dir.compare(0, head.size(), head) != 0)
    return std::nullopt;
  uint64_t e = 0;
  for (char c : std::string_view(dir).substr(head.size())) {
    if (c < '0' || c > '9')
      return std::nullopt;
    e = e * 10 + static_cast<uint64_t>(c - '0');
  }
  return e > 0 ? std::optional<uint64_t>(e) : std::nullopt;
}

}  // namespace

std::string chain_summary_path(const std::string& root, uint64_t epoch) {
  return root + "/chains/" + epoch_name(epoch);
}

std::string encode_chain_summary(const std::string& root, uint64_t epoch, const chain_prefix& prefix) {
  std::string out(magic);
  codec::put(out, epoch);
  codec::put(out, prefix.end.value);
  codec::put(out, static_cast<uint32_t>(prefix.segments.size()));
  for (const auto& seg : prefix.segments) {
    codec::put(out, epoch_of_dir(root, seg.dir).value_or(0));
    codec::put(out, seg.base.value);
    codec::put(out, seg.size);
    codec::put(out, seg.max_timestamp);
    const auto n = seg.memory_index ? seg.memory_index->size() : 0;
    codec::put(out, static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) {
      codec::put(out, (*seg.memory_index)[i].relative_offset);
      codec::put(out, (*seg.memory_index)[i].position);
    }
  }
  prefix.producers.encode_to(out);
  prefix.txns.encode_to(out);
  codec::put(out, crc32c(out));
  return out;
}

std::optional<chain_prefix> decode_chain_summary(const std::string& root, uint64_t epoch, std::string_view bytes) {
  if (bytes.size() < magic.size() + 4 || bytes.substr(0, magic.size()) != magic)
    return std::nullopt;
  auto crc_at = bytes.substr(bytes.size() - 4);
  uint32_t crc = 0;
  if (!codec::get(crc_at, crc) || crc != crc32c(bytes.substr(0, bytes.size() - 4)))
    return std::nullopt;
  auto in = bytes.substr(magic.size(), bytes.size() - 4 - magic.size());
  chain_prefix p;
  uint64_t named = 0;
  uint32_t count = 0;
  if (!codec::get(in, named) || named != epoch || !codec::get(in, p.end.value) || !codec::get(in, count))
    return std::nullopt;
  for (uint32_t i = 0; i < count; ++i) {
    closed_segment seg;
    uint64_t seg_epoch = 0;
    uint32_t entries = 0;
    if (!codec::get(in, seg_epoch) || seg_epoch == 0 || seg_epoch >= epoch || !codec::get(in, seg.base.value) ||
        !codec::get(in, seg.size) || !codec::get(in, seg.max_timestamp) || !codec::get(in, entries) ||
        in.size() / 8 < entries)
      return std::nullopt;
    seg.dir = epoch_dir(root, seg_epoch);
    auto index = std::make_shared<std::vector<index_entry>>(entries);
    for (auto& e : *index)
      if (!codec::get(in, e.relative_offset) || !codec::get(in, e.position))
        return std::nullopt;
    seg.memory_index = std::move(index);
    p.segments.push_back(std::move(seg));
  }
  if (!p.producers.decode_from(in) || !p.txns.decode_from(in) || !in.empty())
    return std::nullopt;
  return p;
}

void write_chain_summary(const std::string& root, uint64_t epoch, const chain_prefix& prefix) {
  const auto dir = root + "/chains";
  std::error_code ec;
  fs::create_directories(dir, ec);
  const auto path = chain_summary_path(root, epoch);
  if (!ec) {
    // Temp file and rename (a reader never sees a part), no fsync: a cache
    // a crash may lose or tear, which its CRC then rejects.
    const auto tmp = path + ".tmp";
    const auto bytes = encode_chain_summary(root, epoch, prefix);
    if (FILE* f = std::fopen(tmp.c_str(), "wb")) {
      const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
      if (std::fclose(f) != 0 || !ok)
        ec = std::error_code(errno ? errno : EIO, std::generic_category());
      else
        fs::rename(tmp, path, ec);
    } else {
      ec = std::error_code(errno, std::generic_category());
    }
  }
  if (ec) {
    log::get("storage")->warn("chain_summary.write_failed path={} error=\"{}\"", path, ec.message());
    return;
  }
  // Earlier summaries are superseded (a reader that races with this finds
  // one missing and walks the headers instead).
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.compare(0, 20, epoch_name(epoch)) < 0) {  // an earlier epoch's, or its leftover .tmp
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

std::optional<uint64_t> newest_chain_summary_epoch(const std::string& root, uint64_t at_most) {
  std::optional<uint64_t> newest;
  std::error_code ec;
  for (fs::directory_iterator it(root + "/chains", ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.size() != 20 || name.find_first_not_of("0123456789") != std::string::npos)
      continue;  // a .tmp
    uint64_t e = 0;
    if (std::from_chars(name.data(), name.data() + name.size(), e).ec != std::errc{})
      continue;  // above 2^64
    if (e > 0 && e <= at_most && (!newest || e > *newest))
      newest = e;
  }
  return newest;
}

std::optional<loaded_chain_summary> read_chain_summary(const std::string& root,
                                                       const std::vector<std::pair<uint64_t, offset>>& epochs) {
  const auto dir = root + "/chains";
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return std::nullopt;
  for (size_t i = epochs.size(); i-- > 0;) {
    const auto path = chain_summary_path(root, epochs[i].first);
    std::string bytes;
    if (util::read_file(path, bytes))
      continue;
    auto p = decode_chain_summary(root, epochs[i].first, bytes);
    if (!p || p->end != epochs[i].second) {
      log::get("storage")->warn("chain_summary.ignored path={} reason=\"{}\"", path,
                                p ? "its end differs from the takeover record's start" : "it does not decode");
      continue;
    }
    bool present = true;
    for (const auto& seg : p->segments) {
      const auto file = seg.dir + "/" + segment_log_name(seg.base);
      std::error_code sec;
      const auto size = fs::file_size(file, sec);
      present = present && !sec && size >= seg.size;
    }
    if (!present)
      continue;  // retention removed a segment since: walk the headers
    return loaded_chain_summary{i, std::move(*p)};
  }
  return std::nullopt;
}

}  // namespace moonmq::storage
