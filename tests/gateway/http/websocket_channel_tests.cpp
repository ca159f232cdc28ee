// The shared WebSocket mechanics, against a real Beast client over loopback: the server side
// runs on its own thread, the client is synchronous on the test's.

#include "gateway/http/websocket_channel.hpp"

#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/websocket.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using callisto::gateway::client_stream;
using callisto::gateway::websocket_channel;
using callisto::gateway::websocket_handler;
using callisto::kernelproto::websocket_frame;

namespace {

// A session that records what its channel reports and answers nothing by itself.
class recording_session : public websocket_handler,
                          public std::enable_shared_from_this<recording_session> {
public:
    recording_session(client_stream&& stream, websocket_channel::limits limits)
        : channel(std::move(stream), limits, callisto::logger(), "test websocket") {}

    void on_open() override {
        std::lock_guard lock(mutex_);
        opened_ = true;
    }
    void on_message(std::string_view data, bool binary) override {
        std::lock_guard lock(mutex_);
        messages_.push_back((binary ? "binary:" : "text:") + std::string(data));
    }
    void on_oversized_message(std::size_t bytes, std::size_t limit) override {
        std::lock_guard lock(mutex_);
        messages_.push_back("oversized:" + std::to_string(bytes) + "/" + std::to_string(limit));
    }

    bool opened() {
        std::lock_guard lock(mutex_);
        return opened_;
    }
    std::vector<std::string> messages() {
        std::lock_guard lock(mutex_);
        return messages_;
    }

    // From the test's thread, as sessions do: onto the channel's executor, in one go.
    void send(std::vector<std::string> texts) {
        asio::post(channel.get_executor(), [self = shared_from_this(), texts = std::move(texts)] {
            for (const auto& text : texts)
                self->channel.send(std::make_shared<const websocket_frame>(text));
        });
    }
    void close(websocket::close_code code, std::string reason) {
        asio::post(channel.get_executor(), [self = shared_from_this(), code, reason] {
            self->channel.close(code, reason);
        });
    }

    websocket_channel channel;

private:
    std::mutex mutex_;
    bool opened_ = false;
    std::vector<std::string> messages_;
};

class loopback {
public:
    explicit loopback(websocket_channel::limits limits, std::string subprotocol = "",
                      std::function<void(recording_session&)> before_accept = {}) {
        tcp::acceptor acceptor(server_io_, {asio::ip::make_address("127.0.0.1"), 0});
        client.next_layer().connect(acceptor.local_endpoint());
        tcp::socket socket = acceptor.accept();

        auto handshake = std::async(std::launch::async, [this, offer = !subprotocol.empty()] {
            if (offer)
                client.set_option(
                    websocket::stream_base::decorator([](websocket::request_type& req) {
                        req.set(beast::http::field::sec_websocket_protocol, "other, v1.test");
                    }));
            client.handshake(response, "127.0.0.1", "/socket");
        });
        beast::flat_buffer buffer;
        callisto::gateway::http_request upgrade;
        beast::http::read(socket, buffer, upgrade);
        session = std::make_shared<recording_session>(
            client_stream(beast::tcp_stream(std::move(socket))), limits);
        if (before_accept) before_accept(*session);
        session->channel.accept(std::move(upgrade), std::move(subprotocol), session, *session);
        server_thread_ = std::thread([this] { server_io_.run(); });
        handshake.get();
        client.auto_fragment(false);
    }
    ~loopback() {
        beast::error_code ignored;
        client.next_layer().close(ignored);
        session.reset();
        server_thread_.join();  // ends once the session's last operation has
    }

    std::string read(bool* binary = nullptr) {
        beast::flat_buffer buffer;
        client.read(buffer);
        if (binary) *binary = client.got_binary();
        return beast::buffers_to_string(buffer.data());
    }

    // Waits up to two seconds for the session to have recorded `count` messages.
    std::vector<std::string> messages(std::size_t count) {
        for (int i = 0; i < 200 && session->messages().size() < count; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return session->messages();
    }

    // The client's handshake ends when the answer is sent; on_open follows on the server.
    bool opened() {
        for (int i = 0; i < 200 && !session->opened(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return session->opened();
    }

    asio::io_context client_io;
    websocket::stream<tcp::socket> client{client_io};
    websocket::response_type response;
    std::shared_ptr<recording_session> session;

private:
    asio::io_context server_io_;
    std::thread server_thread_;
};

const websocket_channel::limits small{1024, 1u << 20, std::chrono::seconds(30)};

}  // namespace

TEST_CASE("websocket channel opens, answers the subprotocol it was given, and relays both ways") {
    loopback link(small, "v1.test");
    CHECK(link.response[beast::http::field::sec_websocket_protocol] == "v1.test");
    CHECK(link.opened());

    link.client.text(true);
    link.client.write(asio::buffer(std::string("hello")));
    link.client.binary(true);
    link.client.write(asio::buffer(std::string("\x01\x02", 2)));
    CHECK(link.messages(2) ==
          std::vector<std::string>{"text:hello", std::string("binary:\x01\x02", 9)});

    link.session->send({"from the server"});
    bool binary = true;
    CHECK(link.read(&binary) == "from the server");
    CHECK_FALSE(binary);
}

TEST_CASE("websocket channel discards a message over the limit, reports it, and keeps reading") {
    loopback link(small);
    link.client.text(true);
    link.client.write(asio::buffer(std::string(5000, 'x')));  // read in pieces: a few reads
    link.client.write(asio::buffer(std::string(1024, 'y')));  // exactly the limit: accepted
    link.client.write(asio::buffer(std::string("after")));
    auto got = link.messages(3);
    REQUIRE(got.size() == 3);
    CHECK(got[0] == "oversized:5000/1024");
    CHECK(got[1] == "text:" + std::string(1024, 'y'));
    CHECK(got[2] == "text:after");
}

TEST_CASE("websocket channel sends frames queued before the handshake finished, in order") {
    loopback link(small, "", [](recording_session& s) {
        // Queued on the executor ahead of the accept's completion.
        s.channel.send(std::make_shared<const websocket_frame>(std::string("first")));
        s.channel.send(std::make_shared<const websocket_frame>(std::string("second")));
    });
    CHECK(link.read() == "first");
    CHECK(link.read() == "second");
}

TEST_CASE(
    "websocket channel closes a client that reads too slowly, after the frame being written") {
    // 3 MiB frames against a 7 MiB queue, queued at once: the first is being written, the
    // second fits behind it, the third would pass the bound.
    const websocket_channel::limits bounded{1024, 7u << 20, std::chrono::seconds(30)};
    loopback link(bounded);
    const std::string big(3u << 20, 'z');
    link.session->send({big, big, big});
    CHECK(link.read().size() == big.size());  // the frame in progress is finished whole
    beast::flat_buffer buffer;
    beast::error_code ec;
    link.client.read(buffer, ec);  // then the close: the queued frame was dropped
    CHECK(ec == websocket::error::closed);
    CHECK(link.client.reason().code == websocket::close_code::policy_error);
    CHECK(std::string(link.client.reason().reason) == "send queue exceeded 7340032 bytes");
}

TEST_CASE("websocket channel close carries its code and a reason cut to fit a control frame") {
    loopback link(small);
    link.session->close(websocket::close_code::going_away, std::string(300, 'r'));
    beast::flat_buffer buffer;
    beast::error_code ec;
    link.client.read(buffer, ec);
    CHECK(ec == websocket::error::closed);
    CHECK(link.client.reason().code == websocket::close_code::going_away);
    CHECK(link.client.reason().reason.size() == 120);
    link.session->send({"after the close"});  // dropped, nothing breaks
}

TEST_CASE("websocket channel can close after writing what is queued, refusing what comes later") {
    loopback link({1024, 7u << 20, std::chrono::seconds(30)});
    const std::string big(3u << 20, 'q');  // still being written when the close is asked for
    asio::post(link.session->channel.get_executor(), [s = link.session, big] {
        s->channel.send(std::make_shared<const websocket_frame>(big));
        s->channel.send(std::make_shared<const websocket_frame>(std::string("last")));
        s->channel.close(websocket::close_code::normal, "context deleted", true);
        s->channel.send(std::make_shared<const websocket_frame>(std::string("too late")));
    });
    CHECK(link.read().size() == big.size());
    CHECK(link.read() == "last");
    beast::flat_buffer buffer;
    beast::error_code ec;
    link.client.read(buffer, ec);
    CHECK(ec == websocket::error::closed);
    CHECK(std::string(link.client.reason().reason) == "context deleted");
}

TEST_CASE("websocket channel closed before its handshake finished closes right after it") {
    loopback link(small, "", [](recording_session& s) {
        s.channel.close(websocket::close_code::normal, "kernel gone");
    });
    beast::flat_buffer buffer;
    beast::error_code ec;
    link.client.read(buffer, ec);
    CHECK(ec == websocket::error::closed);
    CHECK(std::string(link.client.reason().reason) == "kernel gone");
    CHECK_FALSE(link.session->opened());  // the session never started relaying
}
