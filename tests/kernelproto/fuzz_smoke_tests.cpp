#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test_support.hpp"

#include "kernelproto/websocket_format.hpp"
#include "kernelproto/wire_codec.hpp"

namespace kp = callisto::kernelproto;

namespace {

// Flips, inserts, deletes and overwrites bytes; sometimes writes a small or huge integer, which is
// what an offset table mutation needs to reach its edge cases.
std::string mutate(std::string s, std::mt19937_64& rng) {
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
        const std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
        switch (rng() % 5) {
            case 0:
                if (pos < s.size()) s[pos] = static_cast<char>(s[pos] ^ (1 << (rng() % 8)));
                break;
            case 1: s.insert(pos, 1, static_cast<char>(rng() & 0xff)); break;
            case 2:
                if (pos < s.size()) s.erase(pos, 1 + rng() % 8);
                break;
            case 3:
                if (pos < s.size()) s[pos] = static_cast<char>(rng() & 0xff);
                break;
            case 4: {
                const std::uint64_t v = (rng() % 2) ? rng() % 256 : rng();
                for (int i = 0; i < 8 && pos + i < s.size(); ++i)
                    s[pos + i] = static_cast<char>((v >> (8 * i)) & 0xff);
                break;
            }
        }
    }
    return s;
}

}  // namespace

TEST_CASE("decoders survive thousands of mutated and random inputs") {
    std::mt19937_64 rng(20261121);
    kp::message msg;
    msg.header = R"({"msg_id":"m","msg_type":"execute_request","session":"s"})";
    msg.parent_header = R"({"msg_id":"p"})";
    msg.content = R"j({"code":"print('hé')","n":[1,2,{"x":null}]})j";
    msg.buffers = {"buf0", std::string(3, '\0')};

    const std::string seeds[] = {
        kp::to_websocket(msg, kp::channel::shell, kp::websocket_format::v1).str(),
        kp::to_websocket(msg, kp::channel::iopub, kp::websocket_format::legacy).str(),
        [&] {
            auto m = msg;
            m.buffers.clear();
            return kp::to_websocket(m, kp::channel::shell, kp::websocket_format::legacy).str();
        }(),
    };
    std::size_t accepted = 0;
    for (int i = 0; i < 6000; ++i) {
        std::string data;
        if (i % 10 == 0) {
            data.resize(rng() % 128);
            for (char& c : data) c = static_cast<char>(rng() & 0xff);
        } else {
            data = mutate(seeds[i % 3], rng);
        }
        for (auto fmt : {kp::websocket_format::legacy, kp::websocket_format::v1}) {
            for (bool binary : {false, true}) {
                std::error_code ec;
                const auto cm = kp::from_websocket(data, binary, fmt, ec);
                if (!ec) {
                    ++accepted;
                    CHECK(kp::is_json_object(cm.msg.header));
                    CHECK(kp::is_json_object(cm.msg.content));
                }
            }
        }
    }
    CHECK(accepted > 0);  // the mutator leaves some frames intact enough to parse

    const kp::hmac_signer signer("k");
    const kp::hmac_signer unsigned_signer;
    const auto frames = kp::encode(msg, unsigned_signer);
    for (int i = 0; i < 3000; ++i) {
        auto f = frames;
        const auto which = rng() % f.size();
        f[which] = mutate(f[which], rng);
        if (rng() % 4 == 0) f.erase(f.begin() + static_cast<long>(rng() % f.size()));
        std::error_code ec;
        kp::decode(std::vector<std::string>(f), unsigned_signer, ec);
        kp::decode(std::move(f), signer, ec);
        CHECK(ec);  // nothing unsigned passes a signing decoder
    }
}
