#include "gateway/http/ndjson_stream.hpp"
#include "gateway/http/beast.hpp"

#include <sstream>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>

namespace callisto::gateway {

namespace asio = boost::asio;

namespace {
constexpr auto write_timeout = std::chrono::seconds(60);
// How long a TLS client has to answer the close_notify that ends the stream.
constexpr auto shutdown_timeout = std::chrono::seconds(2);

std::string hex(std::size_t n) {
    std::ostringstream out;
    out << std::hex << n;
    return out.str();
}
}  // namespace

ndjson_stream::ndjson_stream(client_stream&& stream, connection_limiter::slot slot,
                             std::size_t max_queued_bytes)
    : stream_(std::move(stream)), slot_(std::move(slot)), max_queued_bytes_(max_queued_bytes) {
    stream_.tcp().expires_never();
}

void ndjson_stream::respond(http_response res) {
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this(), res = std::move(res)]() mutable {
                       if (self->began_ || self->closed_) return;
                       self->began_ = true;
                       self->ending_ = true;
                       res.set(http::field::server, "callisto");
                       res.keep_alive(false);
                       std::ostringstream out;
                       out << res;
                       self->enqueue(out.str());
                   });
}

void ndjson_stream::begin(http::status status, std::string extra_headers,
                          std::string content_type) {
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this(), status, extra = std::move(extra_headers),
                    type = std::move(content_type)] {
                       if (self->began_ || self->closed_) return;
                       self->began_ = true;
                       self->enqueue("HTTP/1.1 " + std::to_string(static_cast<unsigned>(status)) +
                                     " " + std::string(http::obsolete_reason(status)) +
                                     "\r\nServer: callisto\r\nContent-Type: " + type +
                                     "\r\n"
                                     "Cache-Control: no-store\r\nTransfer-Encoding: chunked\r\n"
                                     "Connection: close\r\n" +
                                     extra + "\r\n");
                   });
}

void ndjson_stream::write_line(std::string line) {
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this(), line = std::move(line)]() mutable {
                       if (!self->began_ || self->ending_ || self->closed_) return;
                       line.push_back('\n');
                       self->enqueue(hex(line.size()) + "\r\n" + line + "\r\n");
                   });
}

void ndjson_stream::write_bytes(std::string bytes) {
    if (bytes.empty()) return;  // an empty chunk would end the answer
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this(), bytes = std::move(bytes)]() mutable {
                       if (!self->began_ || self->ending_ || self->closed_) return;
                       self->enqueue(hex(bytes.size()) + "\r\n" + bytes + "\r\n");
                   });
}

void ndjson_stream::end() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
        if (!self->began_ || self->ending_ || self->closed_) return;
        self->ending_ = true;
        self->enqueue("0\r\n\r\n");
    });
}

void ndjson_stream::close() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->shut(); });
}

void ndjson_stream::watch_client(std::function<void()> gone) {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this(), gone = std::move(gone)] {
        if (self->closed_) {
            // Closed before it was watched (a write that failed as the client left): the
            // client is gone already; the read below would never be started to say so.
            if (!self->ending_ && gone) gone();
            return;
        }
        self->gone_ = gone;
        self->stream_.async_read_some(asio::buffer(self->probe_),
                                      [self](beast::error_code, std::size_t) {
                                          // Our own end closes the socket too: that is no client
                                          // leaving.
                                          auto client_gone = std::move(self->gone_);
                                          if (client_gone && !self->ending_) client_gone();
                                      });
    });
}

void ndjson_stream::enqueue(std::string bytes) {
    if (closed_) return;
    if (queued_bytes_ + bytes.size() > max_queued_bytes_) {
        // A reader this slow loses the live stream, not the execution.
        shut();
        return;
    }
    queued_bytes_ += bytes.size();
    queue_.push_back(std::move(bytes));
    if (!writing_) do_write();
}

void ndjson_stream::do_write() {
    writing_ = true;
    stream_.tcp().expires_after(write_timeout);
    asio::async_write(stream_, asio::buffer(queue_.front()),
                      beast::bind_front_handler(&ndjson_stream::on_write, shared_from_this()));
}

void ndjson_stream::on_write(beast::error_code ec, std::size_t) {
    writing_ = false;
    if (ec || closed_) {
        closed_ = false;  // shut() again, now that no write holds the front buffer
        return shut();
    }
    queued_bytes_ -= queue_.front().size();
    queue_.pop_front();
    if (!queue_.empty()) return do_write();
    if (ending_) shut();
}

void ndjson_stream::shut() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ec;
    if (writing_) {
        stream_.tcp().socket().cancel(ec);  // on_write finishes the job
        return;
    }
    queue_.clear();
    queued_bytes_ = 0;
    // TLS: close_notify, so that the client's session can be resumed (client_stream.hpp).
    stream_.async_shutdown(shutdown_timeout, [self = shared_from_this()] {});
}

}  // namespace callisto::gateway
