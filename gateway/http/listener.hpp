#pragma once
// Accepts TCP connections and hands each to an http_session on its own strand, within the
// connection limits; a connection over them, or one that arrives when the process is out of
// file descriptors, is answered 503/429 and closed instead of waiting in the backlog.

#include <cstdint>
#include <memory>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/unique_fd.hpp"
#include "gateway/http/http_services.hpp"

namespace callisto::gateway {

class listener : public std::enable_shared_from_this<listener> {
public:
    // Binds and listens; throws boost::system::system_error when the address is unusable.
    listener(boost::asio::io_context& ioc, boost::asio::ip::tcp::endpoint endpoint,
             http_services& services);

    void run();
    void stop();  // closes the acceptor; thread-safe
    boost::asio::ip::tcp::endpoint local_endpoint() const;

private:
    void do_accept();
    void admit(boost::asio::ip::tcp::socket socket);
    void on_accept_error(boost::system::error_code ec);
    bool refuse_with_reserve_fd();
    void retry_after_error();

    boost::asio::io_context& ioc_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_timer_;
    http_services& services_;
    unique_fd reserve_fd_;  // given up to refuse a connection when descriptors run out
    std::uint64_t refused_for_descriptors_ = 0;
};

}  // namespace callisto::gateway
