#include "gateway/listener.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/http_session.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;
using asio::ip::tcp;

listener::listener(asio::io_context& ioc, tcp::endpoint endpoint, gateway_services& services)
    : ioc_(ioc), acceptor_(asio::make_strand(ioc)), retry_timer_(acceptor_.get_executor()),
      services_(services) {
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

void listener::do_accept() {
    acceptor_.async_accept(
        asio::make_strand(ioc_), [self = shared_from_this()](boost::system::error_code ec,
                                                             tcp::socket socket) {
            if (ec) {
                if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
                // Out of file descriptors and the like: back off instead of spinning.
                self->services_.log.warn("accept: " + ec.message());
                return self->retry_after_error();
            } else {
                auto session = std::make_shared<http_session>(std::move(socket), self->services_);
                self->services_.sessions.add(session);
                session->run();
            }
            self->do_accept();
        });
}

}  // namespace callisto::gateway
