#include "kernelproto/wire_error.hpp"

#include <string>

#include "kernelproto/json_validator.hpp"

namespace callisto::kernelproto {

namespace {

class wire_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "callisto.wire"; }

    std::string message(int ev) const override {
        switch (static_cast<wire_error>(ev)) {
            case wire_error::no_delimiter: return "no <IDS|MSG> delimiter frame";
            case wire_error::too_few_frames: return "fewer than 5 frames after the delimiter";
            case wire_error::bad_signature_length:
                return "signature is not exactly 64 hex characters";
            case wire_error::bad_signature: return "HMAC signature mismatch";
            case wire_error::malformed_json: return "a JSON part is malformed or not an object";
            case wire_error::missing_header_field:
                return "header lacks a string msg_id or msg_type";
            case wire_error::empty_frame: return "empty WebSocket frame";
            case wire_error::bad_offsets:
                return "binary offset table is inconsistent with the frame";
            case wire_error::missing_channel: return "message has no channel";
            case wire_error::unknown_channel: return "unknown channel name";
            case wire_error::invalid_utf8: return "text frame is not valid UTF-8";
            case wire_error::too_deep:
                return "a JSON part is nested deeper than " + std::to_string(max_json_depth) +
                       " levels";
        }
        return "unknown wire error";
    }
};

}  // namespace

const std::error_category& wire_category() {
    static const wire_category_impl instance;
    return instance;
}

std::error_code make_error_code(wire_error e) { return {static_cast<int>(e), wire_category()}; }

}  // namespace callisto::kernelproto
