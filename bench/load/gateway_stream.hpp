#pragma once
// A connection to the gateway, plain TCP or TLS, as one type, so the HTTP requests and the
// WebSockets are written once for http:// and https://: the gateway's own client_stream
// (gateway/http/client_stream.hpp, its side of the same connections; header-only, Beast and
// Asio alone). What is the load generator's own is here: its TLS settings and its connect.
// Timeouts and socket options go to tcp().

#include <memory>
#include <string>
#include <utility>  // before Boost 1.74's awaitable.hpp, which uses std::exchange unincluded

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>

#include "gateway/http/client_stream.hpp"
#include "load_options.hpp"

namespace callisto::load {

// The client TLS settings of a run: TLS 1.2 at least; the server's certificate verified
// against options.ca_file or the system's store, unless options.insecure_skip_verify.
// Throws std::runtime_error naming --ca-file and OpenSSL's reason when the file is unusable.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const load_options& options);

// What to add to a connection error of an https:// run: how to trust the server.
std::string tls_hint(const boost::system::error_code& ec);

using gateway_stream = gateway::client_stream;

// A stream not connected yet: TLS when `tls` is not null.
gateway_stream make_gateway_stream(boost::asio::any_io_executor executor,
                                   std::shared_ptr<boost::asio::ssl::context> tls);

// Connects `stream` to options.host:options.port within the TCP layer's current expiry, and
// for TLS sends the host name (SNI, unless it is an address), checks the certificate names it
// (unless --insecure-skip-verify) and completes the handshake.
boost::asio::awaitable<void> connect_to_gateway(gateway_stream& stream,
                                                const load_options& options);

}  // namespace callisto::load
