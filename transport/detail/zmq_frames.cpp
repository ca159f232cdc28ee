#include "transport/detail/zmq_frames.hpp"

#include <algorithm>
#include <future>
#include <memory>
#include <optional>
#include <string_view>

#include "kernelproto/wire_codec.hpp"

namespace callisto::transport::detail {
namespace {

namespace kp = callisto::kernelproto;

// Frames from this size on are kept as ZeroMQ received them and relayed from there; smaller
// ones are copied, which is cheaper than sharing them.
constexpr std::size_t keep_frame_bytes = 64 * 1024;

// A content from this size on is validated on a helper thread while this thread checks the
// signature (~0.6 ms per MB with SHA extensions; the scan takes about a quarter of that): the
// relay of a big output waits for both, so it waits only for the longer one. The validator is a
// non-allocating scanner; its verdict counts only once the signature has verified, so nothing
// unauthenticated is accepted.
constexpr std::size_t parallel_check_bytes = 1u << 20;

}  // namespace

bool recv_frames(zmq::socket_t& socket, received_t& frames, std::size_t& bytes) {
    frames.clear();
    zmq::message_t part;
    if (!socket.recv(part, zmq::recv_flags::dontwait)) return false;
    for (;;) {
        bytes += part.size();
        const bool more = part.more();
        if (part.size() >= keep_frame_bytes) {
            auto kept = std::make_shared<zmq::message_t>(std::move(part));  // part: empty again
            const std::string_view view(kept->data<char>(), kept->size());
            frames.emplace_back(std::move(kept), view);
        } else {
            frames.emplace_back(std::string(part.data<char>(), part.size()));
        }
        if (!more) return true;
        // ZMQ delivers multipart messages atomically: the remaining parts are already here.
        if (!socket.recv(part, zmq::recv_flags::dontwait)) return true;
    }
}

send_result send_frames(zmq::socket_t& socket, const frames_t& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
        auto flags = zmq::send_flags::dontwait;
        if (i + 1 < frames.size()) flags = flags | zmq::send_flags::sndmore;
        if (!socket.send(zmq::buffer(frames[i]), flags))
            return i == 0 ? send_result::would_block : send_result::failed;
    }
    return send_result::sent;
}

kp::message decode_received(received_t&& frames, const kp::hmac_signer& signer,
                            std::error_code& ec) {
    const auto delim = std::find(frames.begin(), frames.end(), kp::delimiter);
    if (!signer.enabled() || std::distance(delim, frames.end()) < 6 ||
        (delim + 5)->size() < parallel_check_bytes)
        return kp::decode(std::move(frames), signer, ec);
    const std::string_view content = *(delim + 5);  // the frames outlive the check
    std::future<bool> check;
    try {
        check = std::async(std::launch::async, [content] { return kp::is_json_object(content); });
    } catch (const std::system_error&) {
        return kp::decode(std::move(frames), signer, ec);  // no thread to spare: in turn
    }
    std::optional<bool> verdict;
    auto content_is_object = [&](std::string_view) {
        verdict = check.get();
        return *verdict;
    };
    kp::message msg = kp::decode(std::move(frames), signer, ec, content_is_object);
    if (!verdict) check.wait();  // decode failed before asking; the view must not outlive it
    return msg;
}

}  // namespace callisto::transport::detail
