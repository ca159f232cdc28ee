#include "gateway/http/listener.hpp"

#include <fcntl.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include "gateway/http/beast.hpp"
#include "gateway/http/http_session.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

unique_fd open_reserve_fd() { return unique_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }

// A whole HTTP answer for a connection that is not taken: the client learns why, then the
// connection closes.
std::string refusal_text(int status, std::string_view phrase, std::string_view message) {
    const std::string body =
        R"({"reason":")" + std::string(phrase) + R"(","message":")" + std::string(message) + "\"}";
    return "HTTP/1.1 " + std::to_string(status) + " " + std::string(phrase) +
           "\r\nServer: callisto\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
           "Connection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
}

const std::string& server_full_answer() {
    static const std::string text =
        refusal_text(503, "Service Unavailable",
                     "the server holds as many connections as it takes (--max-connections)");
    return text;
}

const std::string& address_full_answer() {
    static const std::string text = refusal_text(429, "Too Many Requests",
                                                 "this address holds as many connections as one "
                                                 "address may (--max-connections-per-address)");
    return text;
}

const std::string& no_descriptors_answer() {
    static const std::string text =
        refusal_text(503, "Service Unavailable", "the server is out of file descriptors");
    return text;
}

// Writes the answer and closes. The socket lives in the handler until then.
void refuse(tcp::socket socket, const std::string& answer) {
    auto s = std::make_shared<tcp::socket>(std::move(socket));
    asio::async_write(*s, asio::buffer(answer), [s](boost::system::error_code, std::size_t) {
        boost::system::error_code ignored;
        s->shutdown(tcp::socket::shutdown_both, ignored);
        s->close(ignored);
    });
}

}  // namespace

listener::listener(asio::io_context& ioc, tcp::endpoint endpoint, http_services& services)
    : ioc_(ioc),
      acceptor_(asio::make_strand(ioc)),
      retry_timer_(acceptor_.get_executor()),
      services_(services),
      reserve_fd_(open_reserve_fd()) {
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(asio::socket_base::max_listen_connections);
}

tcp::endpoint listener::local_endpoint() const { return acceptor_.local_endpoint(); }

void listener::run() {
    asio::dispatch(acceptor_.get_executor(), [self = shared_from_this()] { self->do_accept(); });
}

void listener::stop() {
    asio::dispatch(acceptor_.get_executor(), [self = shared_from_this()] {
        boost::system::error_code ec;
        self->acceptor_.close(ec);
        self->retry_timer_.cancel();
    });
}

void listener::retry_after_error() {
    retry_timer_.expires_after(std::chrono::milliseconds(100));
    retry_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec && self->acceptor_.is_open()) self->do_accept();
    });
}

bool listener::refuse_with_reserve_fd() {
    // True when a waiting connection was refused. The descriptor kept for this moment is given up,
    // so the waiting connection can be accepted, told why, and closed; otherwise it would sit in
    // the backlog until it timed out.
    if (!reserve_fd_) return false;
    reserve_fd_.reset();
    tcp::socket socket(ioc_);
    boost::system::error_code ec;
    acceptor_.non_blocking(true, ec);
    acceptor_.accept(socket, ec);
    boost::system::error_code ignored;
    acceptor_.non_blocking(false, ignored);
    const bool refused = !ec && socket.is_open();
    if (refused) {
        socket.non_blocking(true, ignored);
        asio::write(socket, asio::buffer(no_descriptors_answer()), ignored);
        socket.shutdown(tcp::socket::shutdown_both, ignored);
        socket.close(ignored);
    }
    reserve_fd_ = open_reserve_fd();
    return refused;
}

void listener::on_accept_error(boost::system::error_code ec) {
    const bool out_of_descriptors = ec == asio::error::no_descriptors || ec.value() == ENFILE;
    if (out_of_descriptors && refuse_with_reserve_fd()) {
        if (refused_for_descriptors_++ % 1000 == 0)
            services_.log.warn("accept: out of file descriptors; refusing connections (" +
                               std::to_string(refused_for_descriptors_) + " so far)");
        return do_accept();
    }
    // Out of file descriptors with nothing to give, and the like: back off instead of spinning.
    services_.log.warn("accept: " + ec.message());
    retry_after_error();
}

void listener::admit(tcp::socket socket) {
    boost::system::error_code ec;
    const auto remote = socket.remote_endpoint(ec);
    if (ec) return;  // already gone
    connection_limiter::slot slot;
    switch (services_.connections.try_admit(remote.address().to_string(), slot)) {
        case connection_limiter::verdict::admitted: break;
        case connection_limiter::verdict::server_full:
            return refuse(std::move(socket), server_full_answer());
        case connection_limiter::verdict::address_full:
            return refuse(std::move(socket), address_full_answer());
    }
    beast::tcp_stream tcp(std::move(socket));
    auto stream = services_.tls ? client_stream(std::move(tcp), services_.tls->current())
                                : client_stream(std::move(tcp));
    auto session = std::make_shared<http_session>(std::move(stream), services_, std::move(slot));
    services_.sessions.add(session, "http");
    session->run();
}

void listener::do_accept() {
    acceptor_.async_accept(
        asio::make_strand(ioc_),
        [self = shared_from_this()](boost::system::error_code ec, tcp::socket socket) {
            if (ec) {
                if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
                return self->on_accept_error(ec);
            }
            self->admit(std::move(socket));
            self->do_accept();
        });
}

}  // namespace callisto::gateway
