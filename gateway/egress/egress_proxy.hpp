#pragma once
// The egress proxy of one kernel: it is handed connections the kernel opened (from wherever
// they were accepted), reads one request, decides it by the allowlist, resolves the name
// itself and checks every address it resolved (DNS rebinding), then tunnels a CONNECT's
// bytes both ways or forwards one plain-HTTP request. A refusal is a 403 whose body names the
// rule; each connection ends in one record handed to a callback (the audit log's).
//
// Threads: each connection runs as a coroutine on its own strand of the executor it is given
// (docs/architecture.md, "Threads and strands"); what connections share (the count, the rate)
// is atomic or locked. A plain-HTTP request's body is streamed to the destination as it
// comes, whatever its length, never held whole: the proxy holds per connection at most two
// 16 KiB relay buffers, a head (`max_header`) and its read buffer, a 16 KiB piece of body and
// the first `chunked_hold` bytes of a chunked body (docs/security.md states the bound).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>  // before Asio's awaitable.hpp, which uses std::exchange without it (1.74)
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "common/logger.hpp"
#include "gateway/egress/egress_allowlist.hpp"
#include "gateway/egress/rate_limiter.hpp"

namespace callisto::gateway::egress {

struct proxy_settings {
    std::size_t max_connections = 32;    // open at once through this proxy
    std::size_t bytes_per_second = 0;    // both directions, all connections; 0: no cap
    std::size_t max_header = 16 * 1024;  // a request's or response's head
    // A chunked request body that ends within this many bytes is sent on with its length, as
    // a server that takes no chunked requests (Python's http.server) needs; a longer one is
    // sent on chunked, in the proxy's own framing, as it comes.
    std::size_t chunked_hold = 64 * 1024;
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds idle_timeout{120'000};  // nothing either way: the connection ends
};

// Whose connection it is: set by whoever accepted it (the kernel's own listener), never by
// anything the kernel sends.
struct connection_identity {
    std::string kernel_id;
    std::string user;
};

// One connection, allowed or refused, as the audit log records it.
struct connection_record {
    connection_identity who;
    std::string method;  // "CONNECT", "GET", ...; "" when no request was read
    std::string host;    // as the client wrote it
    std::uint16_t port = 0;
    std::string address;  // the address connected to, or ""
    bool allowed = false;
    std::string rule;  // the rule that decided (egress_allowlist.hpp), or why it ended early
    std::string reason;
    unsigned status = 0;  // what the proxy answered (200 for a tunnel, the destination's status
                          // for plain HTTP, 400/403/429/502 for its own)
    std::string ended;    // "" when a side closed, "idle" (idle_timeout), "stopped" (stop())
    std::uint64_t bytes_up = 0;    // client to destination
    std::uint64_t bytes_down = 0;  // destination to client
    std::chrono::steady_clock::duration duration{};
};

// What one proxy (one kernel) has carried so far, as the admin console shows it: a few
// counters per kernel, gone with its proxy.
struct proxy_activity {
    std::uint64_t allowed = 0;  // connections ended, by decision (as the audit log records them)
    std::uint64_t refused = 0;
    std::uint64_t open = 0;      // open now
    std::uint64_t bytes_up = 0;  // relayed so far, open connections' included
    std::uint64_t bytes_down = 0;
};

struct proxy_target;  // proxy_request.hpp

// Rules the proxy itself applies, named in its records like the allowlist's.
inline constexpr std::string_view rule_connection_limit = "connection limit";
inline constexpr std::string_view rule_bad_request = "bad request";

class egress_proxy : public std::enable_shared_from_this<egress_proxy> {
public:
    // A plain-HTTP request, its body read a piece at a time into a buffer of the proxy's.
    using request_parser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;
    using record_fn = std::function<void(const connection_record&)>;
    // Resolves a name to its addresses: the system's resolver, run by the gateway (the kernel
    // has no DNS), unless a test gives another.
    struct resolved {
        boost::system::error_code ec;
        std::vector<boost::asio::ip::address> addresses;
    };
    using resolve_fn = std::function<boost::asio::awaitable<resolved>(std::string name)>;

    static std::shared_ptr<egress_proxy> create(boost::asio::any_io_executor executor,
                                                std::shared_ptr<const allowlist> rules,
                                                proxy_settings settings, record_fn on_record,
                                                logger log, resolve_fn resolve = {});

    // Takes a connection the kernel opened; returns at once. After stop(), closes it.
    void serve(boost::asio::ip::tcp::socket client, connection_identity who);

    // Ends every open connection (each records itself as it goes) and takes no more: the
    // proxy's part of the gateway's ordered shutdown, and what a kernel's end calls.
    void stop();

    std::size_t open_connections() const { return open_.load(); }
    proxy_activity activity() const;

private:
    struct connection;
    egress_proxy(boost::asio::any_io_executor executor, std::shared_ptr<const allowlist> rules,
                 proxy_settings settings, record_fn on_record, logger log, resolve_fn resolve);

    boost::asio::awaitable<void> handle(std::shared_ptr<connection> c);
    boost::asio::awaitable<bool> open_destination(std::shared_ptr<connection> c,
                                                  std::string_view host_text, std::uint16_t port);
    boost::asio::awaitable<void> tunnel(std::shared_ptr<connection> c);
    boost::asio::awaitable<void> forward(std::shared_ptr<connection> c, request_parser& request,
                                         boost::beast::flat_buffer& buffer,
                                         const proxy_target& target);
    // The request's head, then its body as it comes; false when the request could not be
    // sent whole (the destination never sees a complete one: its connection is closed).
    boost::asio::awaitable<bool> send_request(std::shared_ptr<connection> c, request_parser& parser,
                                              boost::beast::flat_buffer& buffer,
                                              const proxy_target& target);
    // Writes to the destination under the rate cap, counted as bytes up.
    boost::asio::awaitable<bool> send_up(std::shared_ptr<connection> c,
                                         std::vector<boost::asio::const_buffer> pieces);
    // The next piece of the request's body, read into `into` and counted in body_bytes: 0 once
    // the body is complete; nullopt when it could not be read whole (body_failed has done its
    // part: the destination's connection is closed).
    boost::asio::awaitable<std::optional<std::size_t>> next_body_piece(
        std::shared_ptr<connection> c, boost::beast::flat_buffer& buffer, request_parser& parser,
        std::span<char> into, std::uint64_t& body_bytes);
    // A body that could not be read whole: a 400 for a malformed one, nothing for a client
    // that went away; recorded either way.
    boost::asio::awaitable<void> body_failed(std::shared_ptr<connection> c,
                                             boost::system::error_code ec,
                                             std::uint64_t body_bytes);
    boost::asio::awaitable<void> pump(std::shared_ptr<connection> c, bool upward);
    boost::asio::awaitable<void> watch_idle(std::shared_ptr<connection> c);
    boost::asio::awaitable<void> answer(std::shared_ptr<connection> c, unsigned status,
                                        std::string_view phrase, std::string_view body);
    void finish(connection& c);
    // n bytes relayed one way: the connection's record and the proxy's counters.
    void relayed(connection& c, bool upward, std::uint64_t n);

    boost::asio::any_io_executor executor_;
    std::shared_ptr<const allowlist> rules_;
    proxy_settings settings_;
    record_fn on_record_;
    logger log_;
    resolve_fn resolve_;
    rate_limiter rate_;
    std::atomic<std::size_t> open_{0};
    std::atomic<std::uint64_t> allowed_{0};
    std::atomic<std::uint64_t> refused_{0};
    std::atomic<std::uint64_t> bytes_up_{0};
    std::atomic<std::uint64_t> bytes_down_{0};
    std::mutex mutex_;  // guards what follows
    bool stopped_ = false;
    std::vector<std::weak_ptr<connection>> connections_;
};

}  // namespace callisto::gateway::egress
