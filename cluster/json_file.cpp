#include "cluster/json_file.hpp"

#include <cerrno>
#include <filesystem>

#include "util/atomic_file.hpp"
#include "util/logging.hpp"

namespace moonmq::cluster::detail {

namespace fs = std::filesystem;
using json = nlohmann::json;

error corrupt_file(const std::string& what, const std::string& file, const std::string& why) {
  return make_error(errc::corrupt_state, "corrupt " + what + " file " + file + ": " + why +
                                             " (refusing to start from an empty state; restore or remove the file)");
}

status ensure_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create directory " + dir + ": " + ec.message(), ec.value());
  return {};
}

result<std::optional<json>> load_json_file(const std::string& file, const std::string& what, int version) {
  auto tmp = file + ".tmp";
  std::error_code ec;
  if (fs::exists(tmp, ec)) {
    // Left by a write that never reached its rename: never acknowledged.
    log::get("cluster")->info("file.tmp_discarded file={}", tmp);
    fs::remove(tmp, ec);
  }
  std::string text;
  if (auto read_ec = util::read_file(file, text)) {
    if (read_ec.value() == ENOENT)
      return std::optional<json>{};
    return make_error(errc::io_error, "cannot read " + file + ": " + read_ec.message(), read_ec.value());
  }
  auto doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return corrupt_file(what, file, text.empty() ? "file is empty" : "not valid JSON (truncated or overwritten?)");
  if (!doc.is_object())
    return corrupt_file(what, file, "top level is not an object");
  auto v = doc.find("version");
  if (v == doc.end() || !v->is_number_integer() || v->get<int64_t>() != version)
    return corrupt_file(what, file, "\"version\" is missing or not " + std::to_string(version));
  return std::optional<json>{std::move(doc)};
}

status save_json_file(const std::string& file, const json& doc) {
  if (auto ec = util::write_file_atomic(file, doc.dump(1) + "\n"))
    return make_error(errc::io_error, "cannot write " + file + ": " + ec.message(), ec.value());
  return {};
}

}  // namespace moonmq::cluster::detail
