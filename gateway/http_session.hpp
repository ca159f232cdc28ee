#pragma once
// One HTTP/1.1 connection: reads a request, authenticates it, routes it to the REST handlers
// or upgrades it to a kernel WebSocket, writes the answer, and reads the next.

#include <memory>
#include <optional>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "gateway/api_request.hpp"
#include "gateway/gateway_services.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway {

class http_session : public std::enable_shared_from_this<http_session> {
public:
    http_session(boost::asio::ip::tcp::socket&& socket, gateway_services& services);

    void run();
    // Server shutdown; thread-safe. An idle connection closes now; one whose request is being
    // answered (an execution, a tool call, a kernel start) closes after that answer, which the
    // stopping server makes come soon (executions fail as their contexts close).
    void close();

private:
    void do_read();
    void on_header(boost::beast::error_code ec, std::size_t bytes);
    void read_body();
    void on_read(boost::beast::error_code ec, std::size_t bytes);
    void dispatch_request(http_request req);
    void upgrade_to_websocket(const route& r, const user& who, http_request req);
    void upgrade_to_events(const route& r, const user& who, http_request req);
    void send(http_response res);
    void on_write(bool keep_alive, boost::beast::error_code ec, std::size_t bytes);

    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    gateway_services& services_;
    bool keep_alive_ = true;
    bool answering_ = false;  // a request was read and its answer is not written yet
    bool stopping_ = false;   // close after that answer
    std::size_t body_limit_ = 0;  // of the request being read
};

}  // namespace callisto::gateway
