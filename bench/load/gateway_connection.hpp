#pragma once
// The two ways callisto-load talks to a gateway, as coroutines: a keep-alive HTTP connection,
// and a kernel's WebSocket channels (the Jupyter protocol's JSON messages). Both over TLS when
// given a TLS context (https:// and wss://).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>  // before Boost 1.74's awaitable.hpp, which uses std::exchange unincluded

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>

#include "gateway_stream.hpp"
#include "load_options.hpp"

namespace callisto::load {

namespace asio = boost::asio;
namespace beast = boost::beast;

struct http_answer {
    unsigned status = 0;
    std::string body;
};

class http_connection {
public:
    // Over TLS when `tls` is not null (it must outlive the connection).
    http_connection(asio::any_io_executor executor, const load_options& options,
                    asio::ssl::context* tls);

    // Connects (again) when needed. Throws boost::system::system_error on a network error
    // or when no answer came within `timeout`; the connection is then reopened next time.
    asio::awaitable<http_answer> request(beast::http::verb method, std::string target,
                                         std::string body, std::chrono::seconds timeout);

private:
    asio::any_io_executor executor_;
    const load_options& options_;
    asio::ssl::context* tls_;
    std::optional<gateway_stream> stream_;
    beast::flat_buffer buffer_;
};

// A kernel's WebSocket, read all the time as a real client reads it: the output of the other
// clients of the kernel is drained as it arrives (and the gateway's pings answered) while this
// client thinks, so an execution's latency never includes a backlog or a reconnection.
class kernel_socket {
public:
    kernel_socket(asio::any_io_executor executor, const load_options& options,
                  asio::ssl::context* tls);
    ~kernel_socket() { close(); }
    kernel_socket(const kernel_socket&) = delete;
    kernel_socket& operator=(const kernel_socket&) = delete;

    // Throws boost::system::system_error when it cannot connect.
    asio::awaitable<void> open(const std::string& kernel_id);
    bool is_open() const { return connection_ != nullptr; }
    void close();

    // From now on only messages answering `msg_id` are kept for receive(); the rest are dropped
    // unparsed. Call before sending the request.
    void expect(std::string msg_id);
    asio::awaitable<void> send(const nlohmann::json& message);
    // The next kept message, or nullopt at `deadline` (the socket is then closed).
    // Throws boost::system::system_error when the connection failed.
    asio::awaitable<std::optional<nlohmann::json>> receive(
        std::chrono::steady_clock::time_point deadline);

private:
    struct connection;  // shared with the coroutine that reads it
    static asio::awaitable<void> read_all(std::shared_ptr<connection> c);

    asio::any_io_executor executor_;
    const load_options& options_;
    asio::ssl::context* tls_;
    std::shared_ptr<connection> connection_;
};

// A Jupyter message of this type and content, with a fresh msg_id, for `session`.
nlohmann::json make_message(const std::string& msg_type, nlohmann::json content,
                            const std::string& session, const char* channel);
std::string new_id();

}  // namespace callisto::load
