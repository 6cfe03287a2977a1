#pragma once
// TLS for the inter-broker HTTP endpoint (config `Server.Cluster.Tls`,
// CONTRACT §2). Settings are plain data; a tls_context is the loaded,
// verified OpenSSL context that http_server (server role) and http_client
// (client role) use. OpenSSL and Asio stay inside tls.cpp.
//
// Verify modes, as both roles apply them:
//   none     — encrypted, nobody verifies anybody. The server presents
//              CertFile/KeyFile; the client accepts any server certificate.
//   peer     — the client verifies the server's chain against CaFile (and
//              its name, see below); the server does not ask for a client
//              certificate.
//   required — mutual TLS: as "peer", and the server demands a client
//              certificate and verifies it against CaFile; the client
//              presents CertFile/KeyFile.
// Name check (client, peer|required): when the peer address is a DNS name,
// the client sends it as SNI and requires the server certificate to match it
// (subjectAltName DNS, else CN). When the peer address is an IP literal there
// is no name check: any certificate issued by CaFile is accepted, so CaFile
// should be a CA dedicated to the cluster.
// TLS 1.2 is the oldest version either role accepts.

#include <memory>
#include <optional>
#include <string>

#include "config/node_config.hpp"

namespace moonmq::transport {

enum class tls_verify { none, peer, required };

/// "none" | "peer" | "required" → the mode; nullopt for anything else.
std::optional<tls_verify> parse_tls_verify(const std::string& s);
const char* to_string(tls_verify v);

struct tls_settings {
  std::string cert_file;  ///< PEM certificate chain (leaf first)
  std::string key_file;   ///< PEM private key of cert_file, unencrypted
  std::string ca_file;    ///< PEM CA certificate(s) that peers must chain to
  tls_verify verify = tls_verify::none;

  /// TLS is on when a certificate is configured or verification is asked for.
  bool enabled() const { return !cert_file.empty() || verify != tls_verify::none; }
};

/// Converts `Cluster.Tls`. `error` is set (and the result is empty) when
/// Verify is not one of the three modes; the files are only read by
/// tls_context::make_*.
std::optional<tls_settings> tls_settings_from_config(const config::tls_config& c, std::string& error);

/// A loaded OpenSSL context (immutable after creation, shareable between
/// threads, listeners and clients).
class tls_context {
public:
  enum class role { server, client };

  struct result {
    std::shared_ptr<const tls_context> context;  ///< null on error
    std::string error;  ///< names the config key and file: "Tls.KeyFile '/x/key.pem': no start line"
  };

  /// Server role: requires cert_file and key_file (and ca_file for
  /// `required`). Errors: a missing setting, an unreadable file, a file that
  /// is not PEM of the expected kind, a key that does not match the
  /// certificate.
  static result make_server(const tls_settings& s);

  /// Client role: requires ca_file for peer|required, and cert_file +
  /// key_file for required (mutual TLS). A certificate given with `none` or
  /// `peer` is presented too. Errors as make_server.
  static result make_client(const tls_settings& s);

  role side() const { return role_; }
  tls_verify verify() const { return verify_; }

  /// The boost::asio::ssl::context, type-erased (transport-internal users
  /// cast it back). Const objects hand it out because OpenSSL contexts are
  /// internally synchronised once configured.
  void* native() const;

  struct impl;  ///< implementation detail (tls.cpp)
  tls_context(role r, tls_verify v, std::shared_ptr<impl> i);

private:
  role role_;
  tls_verify verify_;
  std::shared_ptr<impl> impl_;
};

}  // namespace moonmq::transport
