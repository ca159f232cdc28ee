#include "gateway_stream.hpp"

#include <stdexcept>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace callisto::load {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

std::shared_ptr<ssl::context> make_tls_context(const load_options& options) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    ::SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
    if (options.insecure_skip_verify) {
        ctx->set_verify_mode(ssl::verify_none);
        return ctx;
    }
    boost::system::error_code ec;
    if (options.ca_file.empty())
        ctx->set_default_verify_paths(ec);
    else
        ctx->load_verify_file(options.ca_file, ec);
    if (ec) {
        std::string reason = ec.message();
        if (unsigned long e = ::ERR_get_error()) {  // OpenSSL's queue says more than Asio
            char buf[256];
            ::ERR_error_string_n(e, buf, sizeof buf);
            reason = buf;
        }
        ::ERR_clear_error();
        throw std::runtime_error(options.ca_file.empty()
                                     ? "the system's CA store: " + reason
                                     : "--ca-file " + options.ca_file + ": " + reason);
    }
    ctx->set_verify_mode(ssl::verify_peer);
    return ctx;
}

std::string tls_hint(const boost::system::error_code& ec) {
    if (ec.category() != asio::error::get_ssl_category()) return {};
    return " (is the server's certificate from a CA this machine trusts? --ca-file=FILE names "
           "a private CA; --insecure-skip-verify accepts a self-signed test certificate)";
}

gateway_stream make_gateway_stream(asio::any_io_executor executor,
                                   std::shared_ptr<ssl::context> tls) {
    gateway_stream::tcp_stream plain(std::move(executor));
    if (!tls) return gateway_stream(std::move(plain));
    return gateway_stream(std::move(plain), std::move(tls));
}

asio::awaitable<void> connect_to_gateway(gateway_stream& stream, const load_options& options) {
    tcp::resolver resolver(stream.get_executor());
    const auto endpoints =
        co_await resolver.async_resolve(options.host, options.port, asio::use_awaitable);
    co_await stream.tcp().async_connect(endpoints, asio::use_awaitable);
    auto* tls = stream.tls();
    if (!tls) co_return;
    boost::system::error_code not_an_address;
    asio::ip::make_address(options.host, not_an_address);
    // SNI carries host names only (RFC 6066); an address is checked against the certificate's
    // IP entries by the verification below all the same. (SSL_set_tlsext_host_name is a macro
    // with a C-style cast; its SSL_ctrl is spelled out here.)
    if (not_an_address &&
        !::SSL_ctrl(tls->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                    const_cast<char*>(options.host.c_str())))
        throw boost::system::system_error(
            boost::system::error_code(static_cast<int>(::ERR_get_error()),
                                      asio::error::get_ssl_category()),
            "SNI");
    if (!options.insecure_skip_verify)
        tls->set_verify_callback(ssl::host_name_verification(options.host));
    co_await tls->async_handshake(ssl::stream_base::client, asio::use_awaitable);
}

}  // namespace callisto::load
