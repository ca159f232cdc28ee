#pragma once
// Accepts TCP connections and hands each to an http_session on its own strand.

#include <memory>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/gateway_services.hpp"

namespace callisto::gateway {

class listener : public std::enable_shared_from_this<listener> {
public:
    // Binds and listens; throws boost::system::system_error when the address is unusable.
    listener(boost::asio::io_context& ioc, boost::asio::ip::tcp::endpoint endpoint,
             gateway_services& services);

    void run();
    void stop();  // closes the acceptor; thread-safe
    boost::asio::ip::tcp::endpoint local_endpoint() const;

private:
    void do_accept();
    void retry_after_error();

    boost::asio::io_context& ioc_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_timer_;
    gateway_services& services_;
};

}  // namespace callisto::gateway
