#include "net/tls.hpp"

#include <fstream>

#include <boost/asio/ssl.hpp>

#include <openssl/ssl.h>

namespace moonmq::transport {

namespace ssl = boost::asio::ssl;

struct tls_context::impl {
  explicit impl(ssl::context::method m) : ctx(m) {}
  ssl::context ctx;
};

std::optional<tls_verify> parse_tls_verify(const std::string& s) {
  if (s == "none")
    return tls_verify::none;
  if (s == "peer")
    return tls_verify::peer;
  if (s == "required")
    return tls_verify::required;
  return std::nullopt;
}

const char* to_string(tls_verify v) {
  switch (v) {
    case tls_verify::none: return "none";
    case tls_verify::peer: return "peer";
    case tls_verify::required: return "required";
  }
  return "?";
}

std::optional<tls_settings> tls_settings_from_config(const config::tls_config& c, std::string& error) {
  auto v = parse_tls_verify(c.verify);
  if (!v) {
    error = "Tls.Verify: expected none, peer or required, got '" + c.verify + "'";
    return std::nullopt;
  }
  error.clear();
  return tls_settings{c.cert_file, c.key_file, c.ca_file, *v};
}

tls_context::tls_context(role r, tls_verify v, std::shared_ptr<impl> i)
  : role_(r), verify_(v), impl_(std::move(i)) {}

void* tls_context::native() const {
  return &impl_->ctx;
}

namespace {

/// "" when `path` can be opened for reading, else why not.
std::string check_readable(const std::string& key, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return key + " '" + path + "': cannot be read (missing file or no permission)";
  return {};
}

std::string describe(const std::string& key, const std::string& path, const boost::system::error_code& ec) {
  return key + " '" + path + "': " + ec.message();
}

/// Loads the certificate chain and its key into `ctx`; "" on success.
std::string load_identity(ssl::context& ctx, const tls_settings& s) {
  if (auto e = check_readable("Tls.CertFile", s.cert_file); !e.empty())
    return e;
  if (auto e = check_readable("Tls.KeyFile", s.key_file); !e.empty())
    return e;
  boost::system::error_code ec;
  ctx.use_certificate_chain_file(s.cert_file, ec);
  if (ec)
    return describe("Tls.CertFile", s.cert_file, ec);
  ctx.use_private_key_file(s.key_file, ssl::context::pem, ec);
  if (ec)
    return describe("Tls.KeyFile", s.key_file, ec);
  // use_private_key_file already refuses most mismatches; this also covers
  // a key loaded before a certificate of another type.
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1)
    return "Tls.KeyFile '" + s.key_file + "': does not match the certificate in '" + s.cert_file + "'";
  return {};
}

std::string load_ca(ssl::context& ctx, const tls_settings& s) {
  if (auto e = check_readable("Tls.CaFile", s.ca_file); !e.empty())
    return e;
  boost::system::error_code ec;
  ctx.load_verify_file(s.ca_file, ec);
  if (ec)
    return describe("Tls.CaFile", s.ca_file, ec);
  return {};
}

std::shared_ptr<tls_context::impl> base_context(ssl::context::method m) {
  auto i = std::make_shared<tls_context::impl>(m);
  i->ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3
                     | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(i->ctx.native_handle(), TLS1_2_VERSION);
  // An encrypted key would make OpenSSL prompt on the terminal; refuse it
  // instead (the load then fails with a "bad decrypt" style error).
  i->ctx.set_password_callback([](std::size_t, ssl::context::password_purpose) { return std::string(); });
  return i;
}

}  // namespace

tls_context::result tls_context::make_server(const tls_settings& s) {
  if (s.cert_file.empty() || s.key_file.empty())
    return {nullptr, "Tls.CertFile and Tls.KeyFile are required for a TLS listener"};
  if (s.verify == tls_verify::required && s.ca_file.empty())
    return {nullptr, "Tls.CaFile is required when Tls.Verify is required"};
  auto i = base_context(ssl::context::tls_server);
  if (auto e = load_identity(i->ctx, s); !e.empty())
    return {nullptr, e};
  if (s.verify == tls_verify::required) {
    if (auto e = load_ca(i->ctx, s); !e.empty())
      return {nullptr, e};
    // Tell clients which CA we accept, so a client with several identities
    // picks the right one.
    if (auto* names = SSL_load_client_CA_file(s.ca_file.c_str()))
      SSL_CTX_set_client_CA_list(i->ctx.native_handle(), names);
    i->ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  } else {
    i->ctx.set_verify_mode(ssl::verify_none);
  }
  return {std::make_shared<tls_context>(role::server, s.verify, std::move(i)), {}};
}

tls_context::result tls_context::make_client(const tls_settings& s) {
  if (s.verify != tls_verify::none && s.ca_file.empty())
    return {nullptr, std::string("Tls.CaFile is required when Tls.Verify is ") + to_string(s.verify)};
  if (s.verify == tls_verify::required && (s.cert_file.empty() || s.key_file.empty()))
    return {nullptr, "Tls.CertFile and Tls.KeyFile are required when Tls.Verify is required (mutual TLS)"};
  if (s.cert_file.empty() != s.key_file.empty())
    return {nullptr, "Tls.CertFile and Tls.KeyFile go together"};
  auto i = base_context(ssl::context::tls_client);
  if (!s.cert_file.empty())
    if (auto e = load_identity(i->ctx, s); !e.empty())
      return {nullptr, e};
  if (s.verify != tls_verify::none) {
    if (auto e = load_ca(i->ctx, s); !e.empty())
      return {nullptr, e};
    i->ctx.set_verify_mode(ssl::verify_peer);
  } else {
    i->ctx.set_verify_mode(ssl::verify_none);
  }
  return {std::make_shared<tls_context>(role::client, s.verify, std::move(i)), {}};
}

}  // namespace moonmq::transport
