#pragma once
// The two ways callisto-load talks to a gateway, as coroutines: a keep-alive HTTP connection,
// and a kernel's WebSocket channels (the Jupyter protocol's JSON messages). Both over TLS when
// given a TLS context (https:// and wss://).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
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
    int retry_after = 0;  // seconds, from a 429's or 503's Retry-After (0: none)
};

class http_connection {
public:
    // Over TLS when `tls` is not null.
    http_connection(asio::any_io_executor executor, const load_options& options,
                    std::shared_ptr<asio::ssl::context> tls);

    // Connects (again) when needed. Throws boost::system::system_error on a network error
    // or when no answer came within `timeout`; the connection is then reopened next time.
    asio::awaitable<http_answer> request(beast::http::verb method, std::string target,
                                         std::string body, std::chrono::seconds timeout);

private:
    asio::any_io_executor executor_;
    const load_options& options_;
    std::shared_ptr<asio::ssl::context> tls_;
    std::optional<gateway_stream> stream_;
    beast::flat_buffer buffer_;
};

// A kernel's WebSocket, read all the time as a real client reads it: the output of the other
// clients of the kernel is drained as it arrives (and the gateway's pings answered) while this
// client thinks, so an execution's latency never includes a backlog or a reconnection.
//
// It notes the highest sequence number the gateway stamped on any message it read
// ("callisto_seq"), so that a reconnection can ask for what it missed (?since=SEQ), as
// JupyterLab does.
class kernel_socket {
public:
    kernel_socket(asio::any_io_executor executor, const load_options& options,
                  std::shared_ptr<asio::ssl::context> tls);
    ~kernel_socket() { close(); }
    kernel_socket(const kernel_socket&) = delete;
    kernel_socket& operator=(const kernel_socket&) = delete;

    // Attaches to the kernel's channels as the Jupyter session `session` (?session_id=). With
    // `resume`, the gateway first replays the kernel's iopub messages after the last sequence
    // number this socket saw (?since=; 0 when it saw none: all it still holds). Throws
    // boost::system::system_error when it cannot connect within `timeout`, handshake_refused
    // when the gateway answers the handshake with an HTTP status.
    asio::awaitable<void> open(
        const std::string& kernel_id, const std::string& session, bool resume = false,
        std::chrono::steady_clock::duration timeout = std::chrono::seconds(30));
    // Connected, and its connection has not failed (a failure is only noticed by reading).
    bool is_open() const;
    // Why the connection failed while nobody was receiving (between executions); "" if it
    // did not.
    std::string failure() const;
    void close();
    // The highest "callisto_seq" read so far, over every connection of this socket.
    std::optional<std::uint64_t> last_sequence() const;

    // From now on only messages answering `msg_id` are kept for receive(), on this connection
    // and the next ones; the rest are dropped unparsed. A replay-gap notice of the gateway
    // (metadata "callisto_gap") is always kept. Call before sending the request.
    void expect(std::string msg_id);
    asio::awaitable<void> send(const nlohmann::json& message);
    // The next kept message, or nullopt at `deadline` (the socket is then closed, unless
    // `close_at_deadline` is false). Throws connection_dropped when the connection failed.
    asio::awaitable<std::optional<nlohmann::json>> receive(
        std::chrono::steady_clock::time_point deadline, bool close_at_deadline = true);

private:
    struct connection;  // shared with the coroutine that reads it
    static asio::awaitable<void> read_all(std::shared_ptr<connection> c);

    asio::any_io_executor executor_;
    const load_options& options_;
    std::shared_ptr<asio::ssl::context> tls_;
    std::shared_ptr<connection> connection_;
    std::string expected_;
    std::optional<std::uint64_t> last_seq_;  // of the connections closed so far
};

// A kernel's WebSocket failed: why, from the client's side.
struct connection_dropped : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// open(): the gateway answered the WebSocket handshake with an HTTP status, not an upgrade
// (404: the kernel is gone; 403: not this token's).
struct handshake_refused : connection_dropped {
    handshake_refused(unsigned http_status, const std::string& body)
        : connection_dropped("the WebSocket handshake was answered " + std::to_string(http_status) +
                             (body.empty() ? "" : ": " + body.substr(0, 200))),
          status(http_status) {}
    unsigned status;
};

// The sequence number the gateway stamped on a relayed message ("callisto_seq":N in its
// metadata), found by a search rather than by parsing: the first occurrence (the header and
// parent header, before the metadata, do not carry it; inside a JSON string its quotes would
// be escaped). nullopt when there is none.
std::optional<std::uint64_t> message_sequence(std::string_view text);

// The gateway's notice that part of a replay was dropped from its buffer (a stream message
// whose metadata is {"callisto_gap":{"from":A,"to":B}}): the sequence numbers [A, B] missed.
std::optional<std::pair<std::uint64_t, std::uint64_t>> replay_gap(const nlohmann::json& message);
bool mentions_replay_gap(std::string_view text);  // a cheap test before parsing

// The WebSocket target of a kernel's channels: /api/kernels/ID/channels?session_id=SESSION,
// with &since=SEQ when resuming.
std::string channels_target(const std::string& kernel_id, const std::string& session,
                            std::optional<std::uint64_t> since);

// Why a WebSocket read or write failed, from the client's side: the server's close code and
// reason when it sent a close frame (`close` is the stream's reason()), else the error.
std::string drop_reason(const boost::system::error_code& ec,
                        const beast::websocket::close_reason& close);

// A Jupyter message of this type and content, with a fresh msg_id, for `session`.
nlohmann::json make_message(const std::string& msg_type, nlohmann::json content,
                            const std::string& session, const char* channel);
std::string new_id();

}  // namespace callisto::load
