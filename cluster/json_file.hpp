#pragma once
// Durable JSON files of the cluster module (ownership table, controller
// fence, move journal): one whole-file document, rewritten atomically with
// util::write_file_atomic (`<file>.tmp`, fsync, rename, fsync of the
// directory). A crash leaves the file holding the previous or the new
// document, never a mix. Used by the cluster module's own classes.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/types.hpp"

namespace moonmq::cluster::detail {

/// Reads and parses `file`. Returns nullopt when it does not exist (a fresh
/// data directory). A left-over `<file>.tmp` belongs to a write that never
/// reached its rename (never acknowledged): it is removed and never read.
/// Errors: io_error (read failed; names the file), corrupt_state (empty,
/// not JSON, not an object, or "version" is not `version`; names the file).
/// `what` names the document in messages ("ownership table").
result<std::optional<nlohmann::json>> load_json_file(const std::string& file, const std::string& what, int version);

/// Writes `doc` to `file` durably (see above). Errors: io_error naming the file.
status save_json_file(const std::string& file, const nlohmann::json& doc);

/// A corrupt_state error: "corrupt <what> file <file>: <why>".
error corrupt_file(const std::string& what, const std::string& file, const std::string& why);

/// Creates `dir` (and parents) when missing. Errors: io_error naming it.
status ensure_dir(const std::string& dir);

}  // namespace moonmq::cluster::detail
