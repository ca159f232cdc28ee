#pragma once
// One HTTP/1.1 connection: reads a request header, authenticates and routes it before any of
// its body is read, reads the body within the route's limit and the server's body budget,
// hands the request to the REST handlers or upgrades it to a WebSocket, writes the answer, and
// reads the next.

#include <memory>
#include <optional>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "gateway/gateway_services.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway {

class http_session : public std::enable_shared_from_this<http_session> {
public:
    // `slot` is the connection's place under the connection limits, held for its whole life.
    http_session(boost::asio::ip::tcp::socket&& socket, gateway_services& services,
                 connection_limiter::slot slot = {});

    void run();
    // Server shutdown; thread-safe. An idle connection closes now; one whose request is being
    // answered (an execution, a tool call, a kernel start) closes after that answer, which the
    // stopping server makes come soon (executions fail as their contexts close).
    void close();

private:
    void do_read();
    void on_header(boost::beast::error_code ec, std::size_t bytes);
    std::optional<http_response> refuse_before_body();
    void read_body();
    void on_read(boost::beast::error_code ec, std::size_t bytes);
    void dispatch_request(http_request req);
    void discard_input();
    void upgrade_to_websocket(const route& r, const user& who, http_request req);
    void upgrade_to_events(const route& r, const user& who, http_request req);
    void send(http_response res);
    void on_write(bool keep_alive, boost::beast::error_code ec, std::size_t bytes);

    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    gateway_services& services_;
    connection_limiter::slot slot_;
    body_budget::reservation body_reservation_;  // the body being read or handled
    route route_;                                // of the request being read
    std::optional<user> who_;                    // its sender, when the token was valid
    bool first_request_ = true;
    bool keep_alive_ = true;
    bool answering_ = false;      // a request was read and its answer is not written yet
    bool stopping_ = false;       // close after that answer
    std::size_t body_limit_ = 0;  // of the request being read
};

}  // namespace callisto::gateway
