#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include "test_support.hpp"

#include "kernelproto/wire_codec.hpp"
#include "kernelproto/wire_error.hpp"

namespace kp = callisto::kernelproto;
using frames_t = std::vector<std::string>;
using kp::wire_error;

namespace {

kp::message sample_message() {
    kp::message msg;
    msg.identities = {"client-a", std::string("\x00\x01\x02", 3)};
    // Python's json.dumps spacing, to show the bytes are kept as they are.
    msg.header =
        R"({"msg_id": "m1", "msg_type": "execute_request", "session": "s1", "username": "u", "date": "2026-11-21T10:00:00.000123Z", "version": "5.3"})";
    msg.parent_header = R"({"msg_id": "p0", "msg_type": "kernel_info_request"})";
    msg.metadata = R"({"trusted": true})";
    msg.content = R"j({"code": "print(1)", "silent": false})j";
    msg.buffers = {std::string("\x00\xff binary", 9), ""};
    return msg;
}

// Frames of a well-signed message; index 0 is the delimiter (no identities).
frames_t signed_frames(const kp::hmac_signer& signer) {
    kp::message msg = sample_message();
    msg.identities.clear();
    msg.buffers.clear();
    return kp::encode(msg, signer);
}

std::error_code decode_error(frames_t frames, const kp::hmac_signer& signer) {
    std::error_code ec;
    const auto msg = kp::decode(std::move(frames), signer, ec);
    if (ec) CHECK(msg.header == "{}");  // failures return an empty message
    return ec;
}

// Re-signs after a part was changed, so the test reaches the check after the signature.
frames_t resigned(frames_t f, const kp::hmac_signer& signer) {
    f[1] = signer.sign({f[2], f[3], f[4], f[5]});
    return f;
}

std::string base64_decode(std::string_view in) {
    static const std::string alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    unsigned bits = 0;
    int nbits = 0;
    for (char c : in) {
        if (c == '=') break;
        const auto v = alphabet.find(c);
        REQUIRE(v != std::string::npos);
        bits = (bits << 6) | static_cast<unsigned>(v);
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            out.push_back(static_cast<char>((bits >> nbits) & 0xff));
        }
    }
    return out;
}

}  // namespace

TEST_CASE("encode lays out identities, delimiter, signature, parts and buffers") {
    const kp::hmac_signer signer("key");
    const auto msg = sample_message();
    const frames_t f = kp::encode(msg, signer);
    REQUIRE(f.size() == 2 + 1 + 1 + 4 + 2);
    CHECK(f[0] == "client-a");
    CHECK(f[1] == msg.identities[1]);
    CHECK(f[2] == "<IDS|MSG>");
    CHECK(f[3] == signer.sign({msg.header, msg.parent_header, msg.metadata, msg.content}));
    CHECK(f[4] == msg.header);
    CHECK(f[7] == msg.content);
    CHECK(f[8] == msg.buffers[0]);
    CHECK(f[9].empty());
}

TEST_CASE("decode round trips a signed message with identities and buffers") {
    const kp::hmac_signer signer("a0436f6c-1916-498b-8eb9-e81ab9368e84");
    const auto original = sample_message();
    std::error_code ec = kp::wire_error::bad_offsets;  // must be cleared on success
    const auto msg = kp::decode(kp::encode(original, signer), signer, ec);
    REQUIRE_FALSE(ec);
    CHECK(msg.identities == original.identities);
    CHECK(msg.header == original.header);
    CHECK(msg.parent_header == original.parent_header);
    CHECK(msg.metadata == original.metadata);
    CHECK(msg.content == original.content);
    CHECK(msg.buffers == original.buffers);
    CHECK(msg.msg_id == "m1");
    CHECK(msg.msg_type == "execute_request");
    CHECK(msg.session == "s1");
    CHECK(msg.parent_msg_id == "p0");
}

TEST_CASE("decode round trips with an empty key and accepts any signature") {
    const kp::hmac_signer unsigned_signer;
    frames_t f = kp::encode(sample_message(), unsigned_signer);
    CHECK(f[3].empty());
    std::error_code ec;
    auto msg = kp::decode(frames_t(f), unsigned_signer, ec);
    REQUIRE_FALSE(ec);
    CHECK(msg.msg_id == "m1");
    CHECK(msg.buffers.size() == 2);
    f[3] = "not a signature at all";
    msg = kp::decode(std::move(f), unsigned_signer, ec);
    CHECK_FALSE(ec);
}

TEST_CASE("decode rejects frames without a delimiter") {
    const kp::hmac_signer signer("k");
    CHECK(decode_error({}, signer) == wire_error::no_delimiter);
    CHECK(decode_error({"id", "{}", "{}"}, signer) == wire_error::no_delimiter);
    CHECK(decode_error({"<IDS|MSG", "s", "{}", "{}", "{}", "{}"}, signer) ==
          wire_error::no_delimiter);
}

TEST_CASE("decode rejects fewer than five frames after the delimiter") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    f.pop_back();
    CHECK(decode_error(f, signer) == wire_error::too_few_frames);
    CHECK(decode_error({"<IDS|MSG>"}, signer) == wire_error::too_few_frames);
    CHECK(decode_error({"<IDS|MSG>"}, kp::hmac_signer{}) == wire_error::too_few_frames);
}

TEST_CASE("decode rejects a signature of the wrong length") {
    const kp::hmac_signer signer("k");
    const frames_t good = signed_frames(signer);
    for (std::string sig : {std::string{}, good[1].substr(0, 63), good[1] + "0",
                            good[1].substr(0, 62), good[1] + good[1]}) {
        CAPTURE(sig);
        frames_t f = good;
        f[1] = sig;
        CHECK(decode_error(f, signer) == wire_error::bad_signature_length);
    }
}

TEST_CASE("decode rejects a 64 character signature that is not hex") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    f[1][5] = 'g';
    CHECK(decode_error(f, signer) == wire_error::bad_signature_length);
    f[1] = std::string(64, ' ');
    CHECK(decode_error(f, signer) == wire_error::bad_signature_length);
}

TEST_CASE("decode rejects an uppercase signature as a mismatch, like jupyter_client") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    for (char& c : f[1]) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    REQUIRE(f[1].find_first_of("ABCDEF") != std::string::npos);
    CHECK(decode_error(f, signer) == wire_error::bad_signature);
}

TEST_CASE("decode rejects a tampered content byte with bad_signature") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    f[5][f[5].size() / 2] ^= 1;
    CHECK(decode_error(f, signer) == wire_error::bad_signature);
}

TEST_CASE("decode rejects a message signed with another key") {
    const frames_t f = signed_frames(kp::hmac_signer("k1"));
    CHECK(decode_error(f, kp::hmac_signer("k2")) == wire_error::bad_signature);
}

TEST_CASE("decode checks the signature before the JSON") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    f[2] = "not json";  // not re-signed: the signature error must win
    CHECK(decode_error(f, signer) == wire_error::bad_signature);
}

TEST_CASE("decode rejects JSON parts that do not parse") {
    const kp::hmac_signer signer("k");
    for (std::size_t part = 2; part <= 5; ++part) {
        CAPTURE(part);
        frames_t f = signed_frames(signer);
        f[part] = R"({"unterminated": )";
        CHECK(decode_error(resigned(f, signer), signer) == wire_error::malformed_json);
    }
}

TEST_CASE("decode rejects JSON parts that are not objects") {
    const kp::hmac_signer signer("k");
    for (std::size_t part = 2; part <= 5; ++part) {
        for (const char* text : {"[]", "\"{}\"", "null", "42", "", "{} []"}) {
            CAPTURE(part);
            CAPTURE(text);
            frames_t f = signed_frames(signer);
            f[part] = text;
            CHECK(decode_error(resigned(f, signer), signer) == wire_error::malformed_json);
        }
    }
}

TEST_CASE("decode rejects invalid UTF-8 inside a JSON string") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    f[5] = "{\"text\": \"\xc3\x28\"}";
    CHECK(decode_error(resigned(f, signer), signer) == wire_error::malformed_json);
}

TEST_CASE("decode rejects a header without msg_type") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    f[2] = R"({"msg_id": "m1", "session": "s"})";
    CHECK(decode_error(resigned(f, signer), signer) == wire_error::missing_header_field);
}

TEST_CASE("decode rejects a header whose msg_id is not a string") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    f[2] = R"({"msg_id": 7, "msg_type": "status"})";
    CHECK(decode_error(resigned(f, signer), signer) == wire_error::missing_header_field);
    f[2] = R"({"msg_type": "status"})";
    CHECK(decode_error(resigned(f, signer), signer) == wire_error::missing_header_field);
}

TEST_CASE("decode accepts an empty parent header and leaves parent_msg_id empty") {
    const kp::hmac_signer signer("k");
    frames_t f = signed_frames(signer);
    f[3] = "{}";
    std::error_code ec;
    const auto msg = kp::decode(resigned(f, signer), signer, ec);
    REQUIRE_FALSE(ec);
    CHECK(msg.parent_header == "{}");
    CHECK(msg.parent_msg_id.empty());
    CHECK(msg.identities.empty());
    CHECK(msg.buffers.empty());
}

TEST_CASE("decode reads a kernel_info_reply recorded from a real ipykernel") {
    std::ifstream in(CALLISTO_SOURCE_DIR "/tests/kernelproto/fixtures/kernel_info_reply.json");
    REQUIRE(in);
    const auto fixture = nlohmann::json::parse(in);
    frames_t frames;
    for (const auto& b64 : fixture["frames_base64"])
        frames.push_back(base64_decode(b64.get<std::string>()));
    const std::string recorded_signature = frames.at(1);

    const kp::hmac_signer signer(fixture["key"].get<std::string>());
    std::error_code ec;
    const auto msg = kp::decode(frames_t(frames), signer, ec);
    REQUIRE_MESSAGE(!ec, ec.message());
    CHECK(msg.identities.empty());  // a DEALER socket sees no routing prefix
    CHECK(msg.msg_type == "kernel_info_reply");
    CHECK_FALSE(msg.msg_id.empty());
    CHECK_FALSE(msg.session.empty());
    CHECK(msg.parent_msg_id == fixture["request_msg_id"].get<std::string>());
    CHECK(msg.header == frames[2]);  // raw bytes kept, Python's spacing included
    CHECK(msg.content == frames[5]);
    const auto content = nlohmann::json::parse(msg.content);
    CHECK(content["status"] == "ok");
    CHECK(content["protocol_version"].get<std::string>().starts_with("5."));
    CHECK(content["language_info"]["name"] == "python");

    // Re-encoding reproduces the kernel's frames, signature included.
    const frames_t again = kp::encode(msg, signer);
    CHECK(again.at(1) == recorded_signature);
    CHECK(again == frames);

    // And the recorded frames fail with any other key.
    CHECK(decode_error(frames, kp::hmac_signer("wrong")) == wire_error::bad_signature);
}

// ---- frames as payloads (the reactor's zero-copy path) --------------------------------------

namespace {
std::vector<kp::payload> as_views(const frames_t& frames, std::shared_ptr<const void> owner) {
    std::vector<kp::payload> out;
    for (const auto& f : frames) out.emplace_back(owner, std::string_view(f));
    return out;
}
}  // namespace

TEST_CASE("decode keeps viewed content and buffers as views of the received frames") {
    const kp::hmac_signer signer("key");
    kp::message original = sample_message();
    original.content = R"({"text": ")" + std::string(200000, 'x') + "\"}";
    auto frames = std::make_shared<frames_t>(kp::encode(original, signer));
    std::error_code ec;
    auto msg = kp::decode(as_views(*frames, frames), signer, ec);
    REQUIRE_FALSE(ec);
    CHECK(msg.content.is_view());
    CHECK(msg.content.data() == (*frames)[7].data());
    CHECK(msg.buffers.size() == 2);
    CHECK(msg.buffers[0].is_view());
    CHECK(msg.content == original.content);
    CHECK(msg.buffers == original.buffers);
    CHECK(msg.identities == original.identities);
    CHECK(msg.header == original.header);
    // The message keeps the frames alive.
    std::weak_ptr<frames_t> weak = frames;
    frames.reset();
    CHECK_FALSE(weak.expired());
    CHECK(msg.content.size() == original.content.size());
}

TEST_CASE("decode asks the caller's content check only after the signature verified") {
    const kp::hmac_signer signer("key");
    int asked = 0;
    auto check = [&](std::string_view content) {
        ++asked;
        return kp::is_json_object(content);
    };
    std::error_code ec;
    auto good = signed_frames(signer);
    kp::decode(as_views(good, nullptr), signer, ec, check);
    CHECK_FALSE(ec);
    CHECK(asked == 1);

    auto tampered = signed_frames(signer);
    tampered[5] = R"({"code": "other"})";
    kp::decode(as_views(tampered, nullptr), signer, ec, check);
    CHECK(ec == wire_error::bad_signature);
    CHECK(asked == 1);  // never asked about bytes that did not verify

    // The check's verdict decides: a "no" is malformed JSON, whatever the bytes.
    kp::decode(as_views(signed_frames(signer), nullptr), signer, ec,
               [](std::string_view) { return false; });
    CHECK(ec == wire_error::malformed_json);
}

TEST_CASE("payload reads like a string, owned or viewed") {
    kp::payload owned = "abc";
    CHECK_FALSE(owned.is_view());
    CHECK(owned == "abc");
    CHECK(owned == std::string("abc"));
    CHECK(owned == std::string_view("abc"));
    CHECK(std::string("abc") == owned);
    CHECK(owned.size() == 3);
    CHECK(std::string(owned.begin(), owned.end()) == "abc");
    auto bytes = std::make_shared<std::string>("{\"a\": 1}");
    kp::payload view(bytes, *bytes);
    CHECK(view.is_view());
    CHECK(view.data() == bytes->data());
    CHECK(nlohmann::json::parse(view)["a"] == 1);
    kp::payload copy = view;  // copies share the owner
    CHECK(copy.data() == bytes->data());
    view = std::string("owned again");
    CHECK_FALSE(view.is_view());
    CHECK(view == "owned again");
    CHECK_FALSE(copy == owned);
    kp::payload empty;
    CHECK(empty.empty());
    CHECK(empty == "");
}
