#include "gateway/e2b/connect_envelope.hpp"

namespace callisto::gateway::e2b {

namespace {

class category : public std::error_category {
public:
    const char* name() const noexcept override { return "connect_envelope"; }
    std::string message(int ev) const override {
        switch (static_cast<envelope_error>(ev)) {
            case envelope_error::none: return "no error";
            case envelope_error::truncated_prefix:
                return "an envelope's 5-byte prefix is cut short";
            case envelope_error::length_past_body:
                return "an envelope's length runs past the end of the body";
            case envelope_error::compressed:
                return "a compressed envelope, but no compression was negotiated";
            case envelope_error::unknown_flags: return "an envelope's flags are not Connect's";
            case envelope_error::message_too_large: return "an enveloped message is too large";
            case envelope_error::not_one_message:
                return "a server-streaming request must hold exactly one message";
            case envelope_error::missing_end: return "the stream has no end-of-stream frame";
            case envelope_error::data_after_end: return "a frame follows the end-of-stream frame";
        }
        return "unknown envelope error";
    }
};

}  // namespace

const std::error_category& envelope_category() {
    static const category c;
    return c;
}

std::error_code make_error_code(envelope_error e) {
    return {static_cast<int>(e), envelope_category()};
}

std::string encode_envelope(std::uint8_t flags, std::string_view payload) {
    std::string out;
    out.reserve(5 + payload.size());
    out.push_back(static_cast<char>(flags));
    const auto n = static_cast<std::uint32_t>(payload.size());
    for (int shift = 24; shift >= 0; shift -= 8)
        out.push_back(static_cast<char>((n >> shift) & 0xff));
    out.append(payload);
    return out;
}

std::vector<envelope_frame> decode_envelopes(std::string_view body, std::size_t max_message,
                                             std::error_code& ec) {
    ec.clear();
    std::vector<envelope_frame> frames;
    std::size_t pos = 0;
    while (pos < body.size()) {
        if (body.size() - pos < 5) {
            ec = envelope_error::truncated_prefix;
            return {};
        }
        const auto flags = static_cast<std::uint8_t>(body[pos]);
        std::uint32_t n = 0;
        for (int i = 1; i <= 4; ++i) n = (n << 8) | static_cast<std::uint8_t>(body[pos + i]);
        if (flags & 0x01) {
            ec = envelope_error::compressed;
            return {};
        }
        if (flags & ~std::uint8_t{0x03}) {
            ec = envelope_error::unknown_flags;
            return {};
        }
        if (n > max_message) {
            ec = envelope_error::message_too_large;
            return {};
        }
        if (n > body.size() - pos - 5) {
            ec = envelope_error::length_past_body;
            return {};
        }
        frames.push_back({flags, std::string(body.substr(pos + 5, n))});
        pos += 5 + n;
    }
    return frames;
}

std::optional<std::string> decode_request_message(std::string_view body, std::size_t max_message,
                                                  std::error_code& ec) {
    auto frames = decode_envelopes(body, max_message, ec);
    if (ec) return std::nullopt;
    if (frames.size() != 1 || frames.front().end()) {
        ec = envelope_error::not_one_message;
        return std::nullopt;
    }
    return std::move(frames.front().payload);
}

std::optional<decoded_stream> decode_response_stream(std::string_view body, std::size_t max_message,
                                                     std::error_code& ec) {
    auto frames = decode_envelopes(body, max_message, ec);
    if (ec) return std::nullopt;
    decoded_stream out;
    bool ended = false;
    for (auto& f : frames) {
        if (ended) {
            ec = envelope_error::data_after_end;
            return std::nullopt;
        }
        if (f.end()) {
            ended = true;
            out.end = std::move(f.payload);
        } else {
            out.messages.push_back(std::move(f.payload));
        }
    }
    if (!ended) {
        ec = envelope_error::missing_end;
        return std::nullopt;
    }
    return out;
}

}  // namespace callisto::gateway::e2b
