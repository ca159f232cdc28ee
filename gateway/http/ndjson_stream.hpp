#pragma once
// A response of newline-delimited JSON over chunked HTTP/1.1: one event per line, written as
// it happens. It takes the connection over from the http_session (like a WebSocket upgrade)
// and closes it after the last chunk. The queue is bounded: a client that reads slower than
// the events come is disconnected; the execution goes on and can be fetched by id.
//
// Every method is thread-safe: the work is posted to the connection's strand.

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "gateway/http/client_stream.hpp"
#include "gateway/http/connection_limiter.hpp"
#include "gateway/http/json_response.hpp"

namespace callisto::gateway {

class ndjson_stream : public std::enable_shared_from_this<ndjson_stream> {
public:
    ndjson_stream(client_stream&& stream, connection_limiter::slot slot = {},
                  std::size_t max_queued_bytes = 16 << 20);

    // An ordinary answer instead of the stream (e.g. an error found after the take-over);
    // only before begin().
    void respond(http_response res);
    // The status line and headers of the chunked answer; `content_type` for other framings of
    // a stream (E2B's Connect streams: application/connect+json).
    void begin(http::status status, std::string extra_headers = {},
               std::string content_type = "application/x-ndjson");
    void write_line(std::string line);
    // Bytes as they are, in one chunk (a framing of its own, no newline added).
    void write_bytes(std::string bytes);
    // The last chunk, then the connection closes.
    void end();
    void close();  // server shutdown
    // `gone` runs once, on the connection's strand, when the client closes its side (or sends
    // anything more) before the stream has ended: a client that gave up (E2B's runCode
    // timeout) has its execution interrupted.
    void watch_client(std::function<void()> gone);

private:
    void enqueue(std::string bytes);
    void do_write();
    void on_write(boost::beast::error_code ec, std::size_t bytes);
    void shut();

    client_stream stream_;
    connection_limiter::slot slot_;  // the connection's place under the connection limits
    const std::size_t max_queued_bytes_;
    std::deque<std::string> queue_;
    std::size_t queued_bytes_ = 0;
    bool writing_ = false;
    bool began_ = false;
    bool ending_ = false;
    bool closed_ = false;
    std::function<void()> gone_;
    char probe_[1];
};

}  // namespace callisto::gateway
