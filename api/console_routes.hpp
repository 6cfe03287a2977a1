#pragma once
// The web console (console/, docs/console.md) on the admin listener: its
// static files, built into the binary (cmake/embed_files.cmake), and the
// client API's read-only topic and group routes, which the page reads from
// the admin listener so that it needs one origin and one token.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/router.hpp"

namespace moonmq::transport {

/// One file of console/ as built into the binary.
struct embedded_file {
  std::string_view name;   ///< file name, e.g. "console.js"
  std::string_view bytes;  ///< its contents
};

/// Every file of console/ (README.md excepted), sorted by name; generated
/// at build time from the folder.
const std::vector<embedded_file>& console_files();

/// The Content-Type of a console file by its extension (.html, .js, .css,
/// .png, .svg, .json; anything else application/octet-stream).
std::string content_type_of(std::string_view name);

/// True for the paths of the console's static files (`/`, `/console/...`):
/// served without the admin token, which only its data calls need.
bool is_console_path(std::string_view path);

/// GET / (console/index.html) and GET /console/{file} (404 `not_found` for
/// a file the console does not have), plus GET /v1/topics,
/// /v1/topics/{topic}, /v1/groups and /v1/groups/{group} answered by
/// `client` (the client listener's router, the same handlers and answers;
/// docs/admin-api.md "Web console").
void add_console_routes(router& r, std::shared_ptr<const router> client);

}  // namespace moonmq::transport
