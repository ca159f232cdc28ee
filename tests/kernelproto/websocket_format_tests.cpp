#include <cstdint>
#include <string>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include "test_support.hpp"

#include "kernelproto/websocket_format.hpp"
#include "kernelproto/wire_error.hpp"

namespace kp = callisto::kernelproto;
using kp::channel;
using kp::websocket_format;
using kp::wire_error;
using kp::testing::from_hex;
using nlohmann::json;

namespace {

constexpr const char* tiny_header = R"({"msg_id":"i","msg_type":"t"})";

kp::message tiny_message() {
    kp::message msg;
    msg.header = tiny_header;
    msg.msg_id = "i";
    msg.msg_type = "t";
    return msg;
}

std::string u64le(std::uint64_t v) {
    std::string out;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return out;
}

std::string u32be(std::uint32_t v) {
    std::string out;
    for (int shift = 24; shift >= 0; shift -= 8)
        out.push_back(static_cast<char>((v >> shift) & 0xff));
    return out;
}

// A v1 frame from explicit offsets and a body, for malformed-table tests.
std::string v1_frame(const std::vector<std::uint64_t>& offsets, std::string_view body,
                     std::uint64_t n_override = 0) {
    std::string out = u64le(n_override != 0 ? n_override : offsets.size());
    for (auto o : offsets) out += u64le(o);
    out += body;
    return out;
}

// Builds a well-formed v1 frame from parts (channel first), as jupyter_server does.
std::string v1_from_parts(const std::vector<std::string>& parts) {
    std::vector<std::uint64_t> offsets{8 * (parts.size() + 2)};
    std::string body;
    for (const auto& p : parts) {
        body += p;
        offsets.push_back(offsets.back() + p.size());
    }
    return v1_frame(offsets, body);
}

kp::client_message parse(std::string_view data, bool binary, websocket_format f,
                         std::error_code& ec) {
    return kp::from_websocket(data, binary, f, ec);
}

std::error_code error_of(std::string_view data, bool binary, websocket_format f) {
    std::error_code ec;
    parse(data, binary, f, ec);
    return ec;
}

std::string legacy_text(const json& j) { return j.dump(); }

json client_request() {
    return {{"header",
             {{"msg_id", "c1"},
              {"msg_type", "execute_request"},
              {"session", "sess"},
              {"username", "u"},
              {"date", "2026-11-21T10:00:00.000Z"},
              {"version", "5.3"}}},
            {"parent_header", json::object()},
            {"metadata", {{"cellId", "x"}}},
            {"content", {{"code", "1+1"}, {"silent", false}}},
            {"buffers", json::array()},
            {"channel", "shell"}};
}

}  // namespace

// ---- kernel -> client -----------------------------------------------------------------------

TEST_CASE("legacy text frame splices the raw parts in jupyter_server's key order") {
    kp::message msg = tiny_message();
    msg.parent_header = R"({"msg_id": "p"})";
    msg.content = R"({"execution_state": "idle"})";
    const auto frame = kp::to_websocket(msg, channel::iopub, websocket_format::legacy);
    CHECK_FALSE(frame.binary);
    CHECK(frame.str() ==
          R"({"header":{"msg_id":"i","msg_type":"t"},"msg_id":"i","msg_type":"t",)"
          R"("parent_header":{"msg_id": "p"},"metadata":{},"content":{"execution_state": "idle"},)"
          R"("buffers":[],"channel":"iopub"})");
    CHECK(json::accept(frame.str()));
}

TEST_CASE("legacy text frame escapes msg_id and msg_type") {
    kp::message msg = tiny_message();
    msg.msg_id = "a\"b\\c";
    const auto frame = kp::to_websocket(msg, channel::shell, websocket_format::legacy);
    const json j = json::parse(frame.str());
    CHECK(j["msg_id"] == "a\"b\\c");
}

TEST_CASE("legacy binary frame has jupyter_server's u32 big-endian offset table") {
    kp::message msg = tiny_message();
    msg.buffers = {"AB", "CDE"};
    const auto frame = kp::to_websocket(msg, channel::iopub, websocket_format::legacy);
    REQUIRE(frame.binary);
    const std::string body =
        R"({"header":{"msg_id":"i","msg_type":"t"},"msg_id":"i","msg_type":"t",)"
        R"("parent_header":{},"metadata":{},"content":{},"channel":"iopub"})";
    const auto b = static_cast<std::uint32_t>(body.size());
    const std::string expected =
        u32be(3) + u32be(16) + u32be(16 + b) + u32be(16 + b + 2) + body + "AB" + "CDE";
    CHECK(frame.str() == expected);
}

TEST_CASE("v1 frame matches jupyter_server's serialize_msg_to_ws_v1 byte for byte") {
    kp::message msg = tiny_message();
    msg.buffers = {"AB"};
    const auto frame = kp::to_websocket(msg, channel::shell, websocket_format::v1);
    CHECK(frame.binary);
    // Output of jupyter_server.base.zmqhandlers.serialize_msg_to_ws_v1(
    //     [header, b'{}', b'{}', b'{}', b'AB'], 'shell') (jupyter_server 1.23).
    const std::string python = from_hex(
        "0700000000000000400000000000000045000000000000006200000000000000640000000000000066000000"
        "0000000068000000000000006a000000000000007368656c6c7b226d73675f6964223a2269222c226d7367"
        "5f74797065223a2274227d7b7d7b7d7b7d4142");
    CHECK(frame.size() == 106);
    CHECK(frame.str() == python);
}

TEST_CASE("v1 frame without buffers has six offsets ending at the frame end") {
    const auto frame = kp::to_websocket(tiny_message(), channel::iopub, websocket_format::v1);
    const std::string expected = u64le(6) + u64le(56) + u64le(61) + u64le(90) + u64le(92) +
                                 u64le(94) + u64le(96) + "iopub" + tiny_header + "{}{}{}";
    CHECK(frame.str() == expected);
}

// ---- round trips ------------------------------------------------------------------------------

TEST_CASE("v1 round trips kernel to client to parse with raw bytes and buffers") {
    kp::message msg;
    msg.header = R"({"msg_id": "m", "msg_type": "comm_msg", "session": "s"})";
    msg.parent_header = R"({"msg_id": "p"})";
    msg.metadata = R"({"a": 1})";
    msg.content = R"({"data": {}})";
    msg.buffers = {std::string("\x00\x01", 2), "", "xyz"};
    for (channel ch : kp::all_channels) {
        const auto frame = kp::to_websocket(msg, ch, websocket_format::v1);
        std::error_code ec;
        const auto cm = parse(frame.str(), true, websocket_format::v1, ec);
        REQUIRE_FALSE(ec);
        CHECK(cm.ch == ch);
        CHECK(cm.msg.header == msg.header);
        CHECK(cm.msg.parent_header == msg.parent_header);
        CHECK(cm.msg.metadata == msg.metadata);
        CHECK(cm.msg.content == msg.content);
        CHECK(cm.msg.buffers == msg.buffers);
        CHECK(cm.msg.msg_id == "m");
        CHECK(cm.msg.msg_type == "comm_msg");
        CHECK(cm.msg.session == "s");
        CHECK(cm.msg.parent_msg_id == "p");
    }
}

TEST_CASE("legacy binary round trips with buffers") {
    kp::message msg = tiny_message();
    msg.content = R"({"comm_id":"c"})";
    msg.buffers = {"one", std::string("\x00\xff", 2)};
    const auto frame = kp::to_websocket(msg, channel::shell, websocket_format::legacy);
    REQUIRE(frame.binary);
    std::error_code ec;
    const auto cm = parse(frame.str(), true, websocket_format::legacy, ec);
    REQUIRE_FALSE(ec);
    CHECK(cm.ch == channel::shell);
    CHECK(cm.msg.msg_id == "i");
    CHECK(json::parse(cm.msg.content) == json{{"comm_id", "c"}});
    CHECK(cm.msg.buffers == msg.buffers);
}

TEST_CASE("legacy text round trips kernel to client to parse") {
    kp::message msg = tiny_message();
    msg.content = R"({"name": "stdout", "text": "hé\n"})";
    const auto frame = kp::to_websocket(msg, channel::stdin_, websocket_format::legacy);
    std::error_code ec;
    const auto cm = parse(frame.str(), false, websocket_format::legacy, ec);
    REQUIRE_FALSE(ec);
    CHECK(cm.ch == channel::stdin_);
    CHECK(json::parse(cm.msg.content) == json::parse(msg.content));
    CHECK(cm.msg.buffers.empty());
}

// ---- client -> kernel -------------------------------------------------------------------------

TEST_CASE("from_websocket reads a JupyterLab legacy text request") {
    std::error_code ec = wire_error::bad_offsets;
    const auto cm = parse(legacy_text(client_request()), false, websocket_format::legacy, ec);
    REQUIRE_FALSE(ec);
    CHECK(cm.ch == channel::shell);
    CHECK(cm.msg.msg_id == "c1");
    CHECK(cm.msg.msg_type == "execute_request");
    CHECK(cm.msg.session == "sess");
    CHECK(cm.msg.parent_msg_id.empty());
    CHECK(json::parse(cm.msg.header) == client_request()["header"]);
    CHECK(cm.msg.parent_header == "{}");
    CHECK(json::parse(cm.msg.metadata) == json{{"cellId", "x"}});
    CHECK(json::parse(cm.msg.content) == client_request()["content"]);
}

TEST_CASE("from_websocket treats missing parent_header and metadata as empty objects") {
    json j = client_request();
    j.erase("parent_header");
    j.erase("metadata");
    j.erase("buffers");
    std::error_code ec;
    const auto cm = parse(legacy_text(j), false, websocket_format::legacy, ec);
    REQUIRE_FALSE(ec);
    CHECK(cm.msg.parent_header == "{}");
    CHECK(cm.msg.metadata == "{}");
}

TEST_CASE("from_websocket reads a legacy text frame on a v1 connection") {
    std::error_code ec;
    const auto cm = parse(legacy_text(client_request()), false, websocket_format::v1, ec);
    REQUIRE_FALSE(ec);
    CHECK(cm.msg.msg_id == "c1");
}

TEST_CASE("from_websocket rejects an empty frame") {
    CHECK(error_of("", false, websocket_format::legacy) == wire_error::empty_frame);
    CHECK(error_of("", true, websocket_format::legacy) == wire_error::empty_frame);
    CHECK(error_of("", true, websocket_format::v1) == wire_error::empty_frame);
}

TEST_CASE("from_websocket rejects a text frame that is not valid UTF-8") {
    for (std::string bad : {std::string("\xff"), std::string("\xc0\xaf"),  // overlong
                            std::string("\xed\xa0\x80"),                   // surrogate
                            std::string("\xf4\x90\x80\x80"),               // > U+10FFFF
                            std::string("\xe2\x82")}) {                    // truncated
        std::string text = legacy_text(client_request());
        text.insert(text.find("1+1"), bad);
        CAPTURE(text);
        CHECK(error_of(text, false, websocket_format::legacy) == wire_error::invalid_utf8);
    }
}

TEST_CASE("from_websocket rejects JSON that does not parse or is not an object") {
    CHECK(error_of("{", false, websocket_format::legacy) == wire_error::malformed_json);
    CHECK(error_of("[1,2]", false, websocket_format::legacy) == wire_error::malformed_json);
    CHECK(error_of("\"str\"", false, websocket_format::legacy) == wire_error::malformed_json);
    for (const char* part : {"header", "parent_header", "metadata", "content"}) {
        CAPTURE(part);
        json j = client_request();
        j[part] = json::array();
        CHECK(error_of(legacy_text(j), false, websocket_format::legacy) ==
              wire_error::malformed_json);
    }
}

TEST_CASE("from_websocket refuses JSON nested too deep, in every format, without recursing") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    // Legacy text frame: deep inside the content.
    std::string text = legacy_text(client_request());
    const std::string code_field = "\"code\":\"1+1\"";
    REQUIRE(text.find(code_field) != std::string::npos);
    text.replace(text.find(code_field), code_field.size(), "\"x\":" + deep);
    CHECK(error_of(text, false, websocket_format::legacy) == wire_error::too_deep);
    // v1: a deep header, and a deep parent header.
    const std::string header = R"({"msg_id":"m","msg_type":"execute_request","x":)" + deep + "}";
    CHECK(error_of(v1_from_parts({"shell", header, "{}", "{}", "{}"}), true,
                   websocket_format::v1) == wire_error::too_deep);
    const std::string parent = "{\"x\":" + deep + "}";
    CHECK(error_of(v1_from_parts({"shell", tiny_header, parent, "{}", "{}"}), true,
                   websocket_format::v1) == wire_error::too_deep);
    // v1 content and metadata are relayed as bytes, validated only: refused all the same.
    CHECK(error_of(v1_from_parts({"shell", tiny_header, "{}", "{}", parent}), true,
                   websocket_format::v1) == wire_error::malformed_json);
    CHECK(std::error_code(wire_error::too_deep).message() ==
          "a JSON part is nested deeper than 1000 levels");
}

TEST_CASE("from_websocket rejects a header without string msg_id or msg_type") {
    json j = client_request();
    j["header"].erase("msg_type");
    CHECK(error_of(legacy_text(j), false, websocket_format::legacy) ==
          wire_error::missing_header_field);
    j = client_request();
    j["header"]["msg_id"] = 12;
    CHECK(error_of(legacy_text(j), false, websocket_format::legacy) ==
          wire_error::missing_header_field);
    j = client_request();
    j.erase("header");
    CHECK(error_of(legacy_text(j), false, websocket_format::legacy) ==
          wire_error::missing_header_field);
}

TEST_CASE("from_websocket rejects a missing channel and keeps the header for the reply") {
    json j = client_request();
    j.erase("channel");
    std::error_code ec;
    const auto cm = parse(legacy_text(j), false, websocket_format::legacy, ec);
    CHECK(ec == wire_error::missing_channel);
    CHECK(cm.msg.msg_id == "c1");
    CHECK(cm.msg.session == "sess");
    CHECK(json::parse(cm.msg.header)["msg_id"] == "c1");
}

TEST_CASE("from_websocket rejects an unknown channel and keeps the header for the reply") {
    for (json name : {json("hb"), json("Shell"), json(3)}) {
        json j = client_request();
        j["channel"] = name;
        std::error_code ec;
        const auto cm = parse(legacy_text(j), false, websocket_format::legacy, ec);
        CHECK(ec == wire_error::unknown_channel);
        CHECK(cm.msg.msg_id == "c1");
    }
}

TEST_CASE("from_websocket keeps the header when content is malformed") {
    json j = client_request();
    j["content"] = "not an object";
    std::error_code ec;
    const auto cm = parse(legacy_text(j), false, websocket_format::legacy, ec);
    CHECK(ec == wire_error::malformed_json);
    CHECK(cm.msg.msg_id == "c1");
    CHECK(cm.msg.msg_type == "execute_request");
}

// ---- v1 from the client -----------------------------------------------------------------------

TEST_CASE("v1 from_websocket validates channel, header and parts") {
    const std::string h = R"({"msg_id":"c1","msg_type":"execute_request","session":"s"})";
    std::error_code ec;
    auto cm =
        parse(v1_from_parts({"control", h, "{}", "{}", "{}"}), true, websocket_format::v1, ec);
    CHECK_FALSE(ec);
    CHECK(cm.ch == channel::control);
    CHECK(cm.msg.header == h);

    cm = parse(v1_from_parts({"", h, "{}", "{}", "{}"}), true, websocket_format::v1, ec);
    CHECK(ec == wire_error::missing_channel);
    CHECK(cm.msg.msg_id == "c1");

    cm = parse(v1_from_parts({"hb", h, "{}", "{}", "{}"}), true, websocket_format::v1, ec);
    CHECK(ec == wire_error::unknown_channel);
    CHECK(cm.msg.msg_id == "c1");

    cm = parse(v1_from_parts({"shell", h, "{}", "{}", "[]"}), true, websocket_format::v1, ec);
    CHECK(ec == wire_error::malformed_json);
    CHECK(cm.msg.msg_id == "c1");

    cm = parse(v1_from_parts({"shell", h, "{}", "nope", "{}"}), true, websocket_format::v1, ec);
    CHECK(ec == wire_error::malformed_json);

    cm = parse(v1_from_parts({"shell", h, "[]", "{}", "{}"}), true, websocket_format::v1, ec);
    CHECK(ec == wire_error::malformed_json);

    cm = parse(v1_from_parts({"shell", "{nope", "{}", "{}", "{}"}), true, websocket_format::v1, ec);
    CHECK(ec == wire_error::malformed_json);
    CHECK(cm.msg.msg_id.empty());

    cm = parse(v1_from_parts({"shell", R"({"msg_id":"x"})", "{}", "{}", "{}"}), true,
               websocket_format::v1, ec);
    CHECK(ec == wire_error::missing_header_field);

    cm = parse(v1_from_parts({"shell", h, "{}", "{}", "{\"s\":\"\xff\"}"}), true,
               websocket_format::v1, ec);
    CHECK(ec == wire_error::malformed_json);
}

TEST_CASE("v1 from_websocket rejects every malformed offset table") {
    const std::string h = R"({"msg_id":"c1","msg_type":"t"})";
    const std::string good = v1_from_parts({"shell", h, "{}", "{}", "{}"});
    REQUIRE_FALSE(error_of(good, true, websocket_format::v1));
    const std::string body = "shell" + h + "{}{}{}";
    const std::uint64_t t = 8 * 7;  // table end for n = 6
    const std::uint64_t end = t + body.size();
    const auto hs = static_cast<std::uint64_t>(h.size());

    SUBCASE("frame shorter than 8 bytes") {
        for (std::size_t len = 1; len < 8; ++len)
            CHECK(error_of(good.substr(0, len), true, websocket_format::v1) ==
                  wire_error::bad_offsets);
    }
    SUBCASE("n = 0") {
        CHECK(error_of(u64le(0) + body, true, websocket_format::v1) == wire_error::bad_offsets);
        CHECK(error_of(u64le(0), true, websocket_format::v1) == wire_error::bad_offsets);
    }
    SUBCASE("n too small for four JSON parts") {
        CHECK(error_of(v1_frame({40, 45, 45 + hs, 47, 49}, "shell" + h + "{}{}"), true,
                       websocket_format::v1) == wire_error::bad_offsets);
    }
    SUBCASE("n huge") {
        for (std::uint64_t n : {std::uint64_t{7}, std::uint64_t{1} << 32, ~std::uint64_t{0},
                                ~std::uint64_t{0} / 8, (~std::uint64_t{0} / 8) + 1}) {
            CAPTURE(n);
            std::string f = good;
            f.replace(0, 8, u64le(n));
            CHECK(error_of(f, true, websocket_format::v1) == wire_error::bad_offsets);
        }
    }
    SUBCASE("offsets decreasing") {
        CHECK(error_of(v1_frame({t, t + 5, t + 4, t + 7 + hs, t + 9 + hs, end}, body), true,
                       websocket_format::v1) == wire_error::bad_offsets);
        CHECK(error_of(v1_frame({t, t + 5, t + 5 + hs, t + 7 + hs, t + 9 + hs, t}, body), true,
                       websocket_format::v1) == wire_error::bad_offsets);
    }
    SUBCASE("offsets beyond the frame end") {
        CHECK(error_of(v1_frame({t, t + 5, t + 5 + hs, t + 7 + hs, t + 9 + hs, end + 1}, body),
                       true, websocket_format::v1) == wire_error::bad_offsets);
        CHECK(error_of(
                  v1_frame({t, t + 5, t + 5 + hs, t + 7 + hs, t + 9 + hs, ~std::uint64_t{0}}, body),
                  true, websocket_format::v1) == wire_error::bad_offsets);
        CHECK(error_of(good.substr(0, good.size() - 1), true, websocket_format::v1) ==
              wire_error::bad_offsets);
    }
    SUBCASE("first offset inside the table") {
        CHECK(error_of(v1_frame({0, t + 5, t + 5 + hs, t + 7 + hs, t + 9 + hs, end}, body), true,
                       websocket_format::v1) == wire_error::bad_offsets);
        CHECK(error_of(v1_frame({t - 1, t + 5, t + 5 + hs, t + 7 + hs, t + 9 + hs, end}, body),
                       true, websocket_format::v1) == wire_error::bad_offsets);
    }
    SUBCASE("table truncated by the frame") {
        CHECK(error_of(good.substr(0, 8 * 4), true, websocket_format::v1) ==
              wire_error::bad_offsets);
    }
}

TEST_CASE("v1 from_websocket tolerates trailing bytes after the last offset, like jupyter_server") {
    const std::string h = R"({"msg_id":"c1","msg_type":"t"})";
    std::error_code ec;
    const auto cm = parse(v1_from_parts({"shell", h, "{}", "{}", "{}"}) + "trailing", true,
                          websocket_format::v1, ec);
    CHECK_FALSE(ec);
    CHECK(cm.msg.content == "{}");
}

TEST_CASE("legacy binary from_websocket rejects malformed offset tables") {
    const std::string body = legacy_text(client_request());
    const auto b = static_cast<std::uint32_t>(body.size());
    const std::string good = u32be(2) + u32be(12) + u32be(12 + b) + body + "BUF";
    std::error_code ec;
    const auto cm = parse(good, true, websocket_format::legacy, ec);
    REQUIRE_FALSE(ec);
    CHECK(cm.msg.buffers == std::vector<kp::payload>{"BUF"});

    CHECK(error_of(std::string("\x00\x00\x01", 3), true, websocket_format::legacy) ==
          wire_error::bad_offsets);
    CHECK(error_of(u32be(0) + body, true, websocket_format::legacy) == wire_error::bad_offsets);
    CHECK(error_of(u32be(0xffffffff) + body, true, websocket_format::legacy) ==
          wire_error::bad_offsets);
    CHECK(error_of(u32be(2) + u32be(12) + u32be(11) + body, true, websocket_format::legacy) ==
          wire_error::bad_offsets);
    CHECK(error_of(u32be(2) + u32be(12) + u32be(12 + b + 4) + body + "BUF", true,
                   websocket_format::legacy) == wire_error::bad_offsets);
    CHECK(error_of(u32be(1) + u32be(4) + body, true, websocket_format::legacy) ==
          wire_error::bad_offsets);
    CHECK(error_of(u32be(1) + u32be(8) + "{}", true, websocket_format::legacy) ==
          wire_error::missing_header_field);
}
