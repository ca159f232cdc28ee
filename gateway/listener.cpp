#include "gateway/listener.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/http_session.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;
using asio::ip::tcp;

listener::listener(asio::io_context& ioc, tcp::endpoint endpoint, gateway_services& services)
    : ioc_(ioc), acceptor_(asio::make_strand(ioc)), services_(services) {
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
    });
}

void listener::do_accept() {
    acceptor_.async_accept(
        asio::make_strand(ioc_), [self = shared_from_this()](boost::system::error_code ec,
                                                             tcp::socket socket) {
            if (ec) {
                if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
                self->services_.log.warn("accept: " + ec.message());
            } else {
                auto session = std::make_shared<http_session>(std::move(socket), self->services_);
                self->services_.sessions.add(session);
                session->run();
            }
            self->do_accept();
        });
}

}  // namespace callisto::gateway
