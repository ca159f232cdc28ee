// The streamed answer (gateway/http/ndjson_stream) on a real loopback connection: when
// its client is taken for gone, which is what interrupts an E2B runCode whose client gave up.

#include <doctest/doctest.h>

#include <chrono>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "gateway/http/ndjson_stream.hpp"

using namespace callisto::gateway;
using callisto::gateway::ndjson_stream;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// A connected pair on loopback: the server's end in an ndjson_stream that has begun a 200
// answer, the client's raw. `gone` counts the stream's reports of its client gone, once
// watch_client() asked for them.
struct stream_pair {
    asio::io_context ioc;
    tcp::socket client{ioc};
    std::shared_ptr<ndjson_stream> stream;
    int gone = 0;

    stream_pair() {
        tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        client.connect(acceptor.local_endpoint());
        tcp::socket server = acceptor.accept();
        stream = std::make_shared<ndjson_stream>(
            client_stream(client_stream::tcp_stream(std::move(server))), connection_limiter::slot{},
            1 << 20);
        stream->begin(http::status::ok);
    }

    void watch_client() {
        stream->watch_client([this] { ++gone; });
    }

    void run_for(std::chrono::milliseconds ms) {
        ioc.restart();
        ioc.run_for(ms);
    }
};

}  // namespace

TEST_CASE("ndjson_stream: a client that closes its side while the stream runs is gone") {
    stream_pair p;
    p.watch_client();
    p.run_for(std::chrono::milliseconds(100));
    CHECK(p.gone == 0);
    p.client.close();
    p.run_for(std::chrono::milliseconds(500));
    CHECK(p.gone == 1);
}

TEST_CASE("ndjson_stream: a stream closed before it is watched reports its client gone at once") {
    stream_pair p;
    p.stream->close();  // as a write that failed when the client left closes it
    p.run_for(std::chrono::milliseconds(100));
    p.watch_client();
    p.run_for(std::chrono::milliseconds(100));
    CHECK(p.gone == 1);
}

TEST_CASE("ndjson_stream: a stream that ended is no client leaving, watched before or after") {
    stream_pair p;
    p.watch_client();
    p.stream->write_line("{}");
    p.stream->end();
    p.run_for(std::chrono::milliseconds(300));
    p.client.close();
    p.run_for(std::chrono::milliseconds(300));
    CHECK(p.gone == 0);

    stream_pair q;
    q.stream->end();
    q.run_for(std::chrono::milliseconds(300));
    q.watch_client();
    q.run_for(std::chrono::milliseconds(100));
    CHECK(q.gone == 0);
}
