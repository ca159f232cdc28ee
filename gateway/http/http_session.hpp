#pragma once
// One HTTP/1.1 connection, plain or TLS, I/O only: on a TLS port the handshake first (plain
// HTTP there is answered 400 in plain text and closed), then it reads a request header and asks the
// dispatcher about it before any of the body is read (refused requests are answered and their body
// dropped), reads the body within the route's limit and the server's body budget, hands the request
// to the dispatcher, writes the answer (or lets a handler take the connection), and reads the next.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "gateway/http/client_stream.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/http/http_services.hpp"
#include "gateway/http/router.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway {

class http_session : public std::enable_shared_from_this<http_session> {
public:
    // `slot` is the connection's place under the connection limits, held for its whole life.
    http_session(client_stream&& stream, http_services& services,
                 connection_limiter::slot slot = {});

    void run();
    // Server shutdown; thread-safe. An idle connection closes now; one whose request is being
    // answered (an execution, a tool call, a kernel start) closes after that answer, which the
    // stopping server makes come soon (executions fail as their contexts close).
    void close();

private:
    void do_handshake();
    void do_detect();
    void on_detect(boost::beast::error_code ec, std::size_t bytes);
    void on_handshake(boost::beast::error_code ec, std::size_t used);
    void refuse_plain_http();
    void do_read();
    void on_header(boost::beast::error_code ec, std::size_t bytes);
    void read_body();
    void on_read(boost::beast::error_code ec, std::size_t bytes);
    void discard_input();
    // A respond_fn callable from any thread: the answer hops back to this session's strand.
    respond_fn respond_later();
    respond_file_fn respond_file_later();
    void send(http_response res);
    // A file, read a chunk at a time as the client takes it.
    struct file_transfer;
    void send_file(file_response res);
    void write_file_chunk(std::shared_ptr<file_transfer> transfer);
    // The headers every answer gets, and whether the connection stays open after it.
    template <class Body>
    void prepare_answer(http::response<Body>& res);
    // 503 for an answer (or a download) the body budget cannot hold now.
    http_response over_budget(std::string_view what, std::string_view location);
    void log_answer(int status, std::size_t body_bytes, std::string_view location = {});
    void on_write(bool keep_alive, boost::beast::error_code ec, std::size_t bytes);

    client_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    http_services& services_;
    connection_limiter::slot slot_;
    body_budget::reservation body_reservation_;    // the body being read or handled
    body_budget::reservation answer_reservation_;  // the answer being written
    route_match route_;                            // of the request being read
    std::optional<user> who_;                      // its sender, when the token was valid
    // For the access log and the metrics: the request being answered.
    std::string method_;
    std::string target_;
    std::string_view route_name_ = "not_found";  // the route table's, outlives us
    std::string user_;
    std::chrono::steady_clock::time_point started_;
    bool first_request_ = true;
    bool keep_alive_ = true;
    bool answering_ = false;            // a request was read and its answer is not written yet
    bool stopping_ = false;             // close after that answer
    std::size_t body_limit_ = 0;        // of the request being read
    std::string_view body_limit_note_;  // what sets it (the dispatcher's, outlives us)
};

}  // namespace callisto::gateway
