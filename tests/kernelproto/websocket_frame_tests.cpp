// The gather encoding (frames that reference the message's parts) against the spliced
// encoding it replaced, kept here verbatim as the reference: the bytes must not change.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "kernelproto/websocket_format.hpp"
#include "kernelproto/websocket_frame.hpp"

namespace kp = callisto::kernelproto;
using kp::channel;
using kp::websocket_format;
using nlohmann::json;

namespace {

// ---- the reference: the encoder as it was before frames became gather lists -------------

void put_u32_be(std::string& out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
        out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_u64_le(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string json_string(std::string_view s) {
    return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string reference_legacy_json(const kp::message& msg, channel ch, bool with_buffers_key) {
    std::string out;
    out += R"({"header":)";
    out += msg.header;
    out += R"(,"msg_id":)";
    out += json_string(msg.msg_id);
    out += R"(,"msg_type":)";
    out += json_string(msg.msg_type);
    out += R"(,"parent_header":)";
    out += msg.parent_header;
    out += R"(,"metadata":)";
    out += msg.metadata;
    out += R"(,"content":)";
    out += msg.content;
    if (with_buffers_key) out += R"(,"buffers":[])";
    out += R"(,"channel":")";
    out += kp::to_string(ch);
    out += R"("})";
    return out;
}

std::pair<std::string, bool> reference_legacy(const kp::message& msg, channel ch) {
    if (msg.buffers.empty()) return {reference_legacy_json(msg, ch, true), false};
    const std::string body = reference_legacy_json(msg, ch, false);
    const std::size_t nbufs = 1 + msg.buffers.size();
    std::string out;
    put_u32_be(out, static_cast<std::uint32_t>(nbufs));
    std::size_t offset = 4 * (nbufs + 1);
    put_u32_be(out, static_cast<std::uint32_t>(offset));
    offset += body.size();
    for (const auto& b : msg.buffers) {
        put_u32_be(out, static_cast<std::uint32_t>(offset));
        offset += b.size();
    }
    out += body;
    for (const auto& b : msg.buffers) out += b;
    return {out, true};
}

std::pair<std::string, bool> reference_v1(const kp::message& msg, channel ch) {
    const std::string_view channel_name = kp::to_string(ch);
    std::vector<std::string_view> parts{msg.header, msg.parent_header, msg.metadata, msg.content};
    for (const auto& b : msg.buffers) parts.emplace_back(b);
    const std::uint64_t count = 1 + parts.size() + 1;
    std::uint64_t offset = 8 * (1 + count);
    std::string out;
    put_u64_le(out, count);
    put_u64_le(out, offset);
    offset += channel_name.size();
    put_u64_le(out, offset);
    for (auto p : parts) {
        offset += p.size();
        put_u64_le(out, offset);
    }
    out += channel_name;
    for (auto p : parts) out += p;
    return {out, true};
}

std::pair<std::string, bool> reference(const kp::message& msg, channel ch, websocket_format f) {
    return f == websocket_format::v1 ? reference_v1(msg, ch) : reference_legacy(msg, ch);
}

// ---- messages ----------------------------------------------------------------------------

kp::message make(std::string content, std::vector<std::string> buffers = {}) {
    kp::message msg;
    msg.msg_id = "id-é-\"q\"";
    msg.msg_type = "stream";
    msg.header = R"({"msg_id":"id-é-\"q\"","msg_type":"stream","session":"s"})";
    msg.parent_header = R"({"msg_id":"parent"})";
    msg.metadata = R"({"callisto_seq":12})";
    msg.content = std::move(content);
    for (auto& b : buffers) msg.buffers.emplace_back(std::move(b));
    return msg;
}

std::string big_text(std::size_t n) {
    std::string text = R"({"name":"stdout","text":")";
    const std::string line = "h\xc3\xa9llo \xe4\xb8\xad \xf0\x9f\x98\x80 \\u00e9\\n";
    while (text.size() < n) text += line;
    return text + "\"}";
}

std::vector<kp::message> samples() {
    std::vector<kp::message> out;
    out.push_back(make("{}"));
    out.push_back(make(R"({"execution_state":"idle"})"));
    out.push_back(make(big_text(5000)));                       // just above the reference threshold
    out.push_back(make(big_text(300000)));                     // big: referenced
    out.push_back(make(R"({"data":{}})", {"AB", "", "xyz"}));  // small and empty buffers
    out.push_back(make(big_text(20000), {std::string(10000, '\0'), "", std::string(3, '\xff')}));
    out.push_back(make(R"({"a":1})", {""}));  // one empty buffer only
    kp::message big_header = make(big_text(100));
    big_header.header = R"({"msg_id":"x","msg_type":"t","pad":")" + std::string(9000, 'p') + "\"}";
    out.push_back(big_header);
    return out;
}

}  // namespace

TEST_CASE("gather frames are byte-identical to the spliced encoding, for every format") {
    for (const auto format : {websocket_format::legacy, websocket_format::v1}) {
        for (const auto ch : {channel::iopub, channel::shell, channel::stdin_, channel::control}) {
            for (const auto& msg : samples()) {
                CAPTURE(static_cast<int>(format));
                CAPTURE(msg.content.size());
                CAPTURE(msg.buffers.size());
                const auto [expected, binary] = reference(msg, ch, format);
                const auto copied = kp::to_websocket(msg, ch, format);
                const auto shared =
                    kp::to_websocket(std::make_shared<const kp::message>(msg), ch, format);
                CHECK(copied.str() == expected);
                CHECK(shared.str() == expected);
                CHECK(copied.binary == binary);
                CHECK(shared.binary == binary);
                CHECK(copied.size() == expected.size());
                CHECK(shared.size() == expected.size());
                std::size_t total = 0;
                for (auto p : shared.pieces()) total += p.size();
                CHECK(total == expected.size());
            }
        }
    }
}

TEST_CASE("a relayed frame references big parts in place and copies small ones") {
    auto msg = std::make_shared<const kp::message>(
        make(big_text(300000), {std::string(100000, 'b'), "tiny"}));
    for (const auto format : {websocket_format::legacy, websocket_format::v1}) {
        const auto frame = kp::to_websocket(msg, channel::iopub, format);
        bool content_in_place = false, buffer_in_place = false, tiny_in_place = false;
        for (auto p : frame.pieces()) {
            content_in_place |= p.data() == msg->content.data() && p.size() == msg->content.size();
            buffer_in_place |= p.data() == msg->buffers[0].data();
            tiny_in_place |= p.data() == msg->buffers[1].data();
        }
        CHECK(content_in_place);
        CHECK(buffer_in_place);
        CHECK_FALSE(tiny_in_place);
        // A handful of pieces, not one per part: glue between references is merged.
        CHECK(frame.pieces().size() <= 6);
    }
    // The copying form never points into the message.
    const auto copied = kp::to_websocket(*msg, channel::iopub, websocket_format::v1);
    for (auto p : copied.pieces()) CHECK(p.data() != msg->content.data());
}

TEST_CASE("a relayed frame keeps its message alive") {
    auto msg = std::make_shared<const kp::message>(make(big_text(50000), {std::string(8000, 'z')}));
    const auto expected = reference(*msg, channel::iopub, websocket_format::legacy).first;
    std::weak_ptr<const kp::message> weak = msg;
    auto frame = kp::to_websocket(std::move(msg), channel::iopub, websocket_format::legacy);
    CHECK_FALSE(weak.expired());
    CHECK(frame.str() == expected);
    auto moved = std::move(frame);  // frames move (into a shared_ptr) without dangling
    CHECK(moved.str() == expected);
    CHECK_FALSE(weak.expired());
    { auto gone = std::move(moved); }
    CHECK(weak.expired());
}

TEST_CASE("websocket_frame building: glue merges, empty parts vanish, short references copy") {
    kp::websocket_frame f;
    CHECK(f.size() == 0);
    CHECK(f.pieces().empty());
    CHECK(f.str().empty());
    f.append("ab");
    f.append("");
    f.append("cd");
    CHECK(f.pieces().size() == 1);
    const std::string big(kp::websocket_frame::min_ref_size, 'x');
    f.append_ref(big);
    f.append_ref("short");
    f.append_ref("");
    CHECK(f.pieces().size() == 3);  // "abcd", big, "short"
    CHECK(f.pieces()[1].data() == big.data());
    CHECK(f.str() == "abcd" + big + "short");
    CHECK(f.size() == 4 + big.size() + 5);

    kp::websocket_frame whole(std::string("\x00\x01", 2), true);
    CHECK(whole.binary);
    CHECK(whole.size() == 2);
    CHECK(whole.str() == std::string("\x00\x01", 2));
    CHECK(kp::websocket_frame(std::string()).pieces().empty());
}
