#include "gateway/http/tls_context.hpp"

#include <stdexcept>
#include <string>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace callisto::gateway {
namespace {

namespace ssl = boost::asio::ssl;

std::string openssl_reason(const boost::system::error_code& ec) {
    std::string reason = ec.message();
    // Asio's message is often "asio.ssl error"; OpenSSL's own queue says more.
    if (unsigned long e = ::ERR_get_error()) {
        char buf[256];
        ::ERR_error_string_n(e, buf, sizeof buf);
        reason = buf;
    }
    ::ERR_clear_error();
    return reason;
}

template <class F>
void use(const char* option, const std::filesystem::path& file, F&& f) {
    boost::system::error_code ec;
    f(ec);
    if (ec)
        throw std::runtime_error(std::string(option) + " " + file.string() + ": " +
                                 openssl_reason(ec));
}

}  // namespace

tls_context::tls_context(tls_files files) : files_(std::move(files)), current_(load(files_)) {}

std::shared_ptr<ssl::context> tls_context::current() const {
    std::lock_guard lock(mutex_);
    return current_;
}

void tls_context::reload() {
    auto fresh = load(files_);
    std::lock_guard lock(mutex_);
    current_ = std::move(fresh);
}

std::shared_ptr<ssl::context> tls_context::load(const tls_files& files) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                     ssl::context::single_dh_use);
    ::SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
    use("--certfile", files.certfile,
        [&](auto& ec) { ctx->use_certificate_chain_file(files.certfile.string(), ec); });
    use("--keyfile", files.keyfile, [&](auto& ec) {
        ctx->use_private_key_file(files.keyfile.string(), ssl::context::pem, ec);
    });
    if (::SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
        ::ERR_clear_error();
        throw std::runtime_error("--keyfile " + files.keyfile.string() +
                                 ": the key does not match the certificate in " +
                                 files.certfile.string());
    }
    if (!files.client_ca.empty()) {
        use("--client-ca", files.client_ca,
            [&](auto& ec) { ctx->load_verify_file(files.client_ca.string(), ec); });
        ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
    // OpenSSL refuses to resume a session that verified a client certificate (alert 80,
    // internal error) unless the context names the sessions it made; each reload makes a new
    // context with its own cache and ticket keys, so one fixed name cannot mix them.
    static constexpr unsigned char session_id_context[] = "callisto";
    if (::SSL_CTX_set_session_id_context(ctx->native_handle(), session_id_context,
                                         sizeof session_id_context - 1) != 1) {
        ::ERR_clear_error();
        throw std::runtime_error("TLS: cannot set the session id context");
    }
    return ctx;
}

}  // namespace callisto::gateway
