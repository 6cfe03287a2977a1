#include "groups/epoch_offsets.hpp"

#include <cstdio>
#include <filesystem>

#include "util/atomic_file.hpp"
#include "util/logging.hpp"

namespace moonmq::groups {
namespace {

namespace fs = std::filesystem;

constexpr size_t epoch_digits = 20;

error io_failure(const std::string& what, const std::string& path, std::error_code ec) {
  return make_error(errc::io_error, what + " " + path + ": " + ec.message(), ec.value());
}

/// The epoch a directory name under offsets/ stands for (20 digits), or 0.
int64_t epoch_of_name(const std::string& name) {
  if (name.size() != epoch_digits || name.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  try {
    return std::stoll(name);
  } catch (...) {
    return 0;
  }
}

/// The newest epoch below `below` with an offsets directory, or 0.
result<int64_t> newest_epoch_below(const std::string& partition_root, int64_t below) {
  const auto dir = partition_root + "/offsets";
  int64_t newest = 0;
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return ec ? result<int64_t>(io_failure("cannot stat", dir, ec)) : int64_t{0};
  for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec)) {
    auto e = epoch_of_name(it->path().filename().string());
    if (e > newest && e < below)
      newest = e;
  }
  if (ec)
    return io_failure("cannot list", dir, ec);
  return newest;
}

/// Writes every offset of `from` into a new store at `dir`.
status copy_all(const offset_store& from, const std::string& dir) {
  auto to = offset_store::open(dir);
  if (!to)
    return to.err();
  for (const auto& group : from.list_groups()) {
    auto entries = from.fetch(group);
    if (!entries)
      return entries.err();
    if (entries->empty())
      continue;
    if (auto ok = to->commit(group, *entries); !ok)
      return ok;
  }
  return {};
}

}  // namespace

std::string epoch_offsets_dir(const std::string& partition_root, int64_t epoch) {
  char name[epoch_digits + 1];
  std::snprintf(name, sizeof name, "%020lld", static_cast<long long>(epoch));
  return partition_root + "/offsets/" + name;
}

result<offset_store> open_epoch_offsets(const std::string& partition_root, int64_t epoch) {
  if (epoch <= 0)
    return make_error(errc::invalid_argument, "owner epoch " + std::to_string(epoch) + " is not positive");
  const auto dir = epoch_offsets_dir(partition_root, epoch);
  std::error_code ec;
  if (fs::exists(dir, ec))
    return offset_store::open(dir);
  if (ec)
    return io_failure("cannot stat", dir, ec);
  auto earlier = newest_epoch_below(partition_root, epoch);
  if (!earlier)
    return earlier.err();
  const auto offsets_dir = partition_root + "/offsets";
  if (fs::create_directories(offsets_dir, ec)) {
    // New: the partition's root (created here when its log has not
    // written yet) and offsets/ must survive a crash with what goes in.
    for (const auto& d : {fs::path{partition_root}.parent_path().string(), partition_root})
      if (auto sync_ec = util::fsync_dir(d))
        return io_failure("cannot fsync", d, sync_ec);
  } else if (ec) {
    return io_failure("cannot create", offsets_dir, ec);
  }
  const auto tmp = dir + ".tmp";
  fs::remove_all(tmp, ec);
  if (ec)
    return io_failure("cannot remove", tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec)
    return io_failure("cannot create", tmp, ec);
  size_t carried = 0;
  if (*earlier > 0) {
    auto from = offset_store::open_read_only(epoch_offsets_dir(partition_root, *earlier));
    if (!from)
      return from.err();
    if (auto ok = copy_all(*from, tmp); !ok)
      return ok.err();
    carried = from->list_groups().size();
  } else if (auto made = offset_store::open(tmp); !made) {
    return made.err();
  }
  // The carried files are durable (each written with fsync); the rename
  // makes the epoch's directory appear whole, and the fsync of offsets/
  // keeps it.
  fs::rename(tmp, dir, ec);
  if (ec)
    return io_failure("cannot rename " + tmp + " to", dir, ec);
  if (auto sync_ec = util::fsync_dir(offsets_dir))
    return io_failure("cannot fsync", offsets_dir, sync_ec);
  log::get("groups")->info("offsets.carried_forward root={} epoch={} from_epoch={} groups={}", partition_root, epoch,
                           *earlier, carried);
  return offset_store::open(dir);
}

result<std::optional<offset_store>> read_newest_offsets(const std::string& partition_root, int64_t below) {
  auto newest = newest_epoch_below(partition_root, below);
  if (!newest)
    return newest.err();
  if (*newest == 0)
    return std::optional<offset_store>{};
  auto store = offset_store::open_read_only(epoch_offsets_dir(partition_root, *newest));
  if (!store)
    return store.err();
  return std::optional<offset_store>{std::move(store).value()};
}

}  // namespace moonmq::groups
