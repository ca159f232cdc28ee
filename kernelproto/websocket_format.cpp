#include "kernelproto/websocket_format.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelproto/untrusted_json.hpp"
#include "kernelproto/wire_error.hpp"

namespace callisto::kernelproto {

namespace {

using nlohmann::json;
constexpr auto replace_invalid = json::error_handler_t::replace;

// ---- byte helpers -------------------------------------------------------------------------

void put_u32_be(std::string& out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
        out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_u64_le(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t get_u32_be(std::string_view data, std::size_t pos) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(data[pos + i]);
    return v;
}

std::uint64_t get_u64_le(std::string_view data, std::size_t pos) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i)
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(data[pos + i])) << (8 * i);
    return v;
}

// The table of `n` offsets that follows a binary frame's count (each `width` bytes, read by
// `get`), when every one is at or after the one before it (the first after the table) and
// none past the end of the frame; nullopt when not.
template <class Get>
std::optional<std::vector<std::uint64_t>> ascending_offsets(std::string_view data, std::uint64_t n,
                                                            std::uint64_t width, Get get) {
    const std::uint64_t table_end = width * (n + 1);
    std::vector<std::uint64_t> offsets(n);
    for (std::uint64_t i = 0; i < n; ++i) {
        offsets[i] = get(data, width * (i + 1));
        const std::uint64_t floor = i == 0 ? table_end : offsets[i - 1];
        if (offsets[i] < floor || offsets[i] > data.size()) return std::nullopt;
    }
    return offsets;
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* end = p + s.size();
    while (p < end) {
        const unsigned char c = *p;
        if (c < 0x80) {
            ++p;
            continue;
        }
        std::size_t n = 0;
        unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            if (c == 0xe0) lo = 0xa0;
            if (c == 0xed) hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            if (c == 0xf0) lo = 0x90;
            if (c == 0xf4) hi = 0x8f;
        } else {
            return false;
        }
        if (static_cast<std::size_t>(end - p) <= n) return false;
        if (p[1] < lo || p[1] > hi) return false;
        for (std::size_t i = 2; i <= n; ++i)
            if ((p[i] & 0xc0) != 0x80) return false;
        p += n + 1;
    }
    return true;
}

std::string json_string(std::string_view s) {
    return json(s).dump(-1, ' ', false, replace_invalid);
}

// ---- kernel -> client ---------------------------------------------------------------------

// The frame under construction. With an owner, the message's parts are referenced (the frame
// keeps the message alive); without one, everything is copied.
class frame_builder {
public:
    explicit frame_builder(std::shared_ptr<const void> owner) : owner_(std::move(owner)) {}

    void glue(std::string_view bytes) { frame_.append(bytes); }
    void part(std::string_view bytes) {
        if (owner_)
            frame_.append_ref(bytes);
        else
            frame_.append(bytes);
    }
    void frame(const websocket_frame& other) { frame_.append_frame(other); }
    websocket_frame finish(bool binary) {
        frame_.binary = binary;
        frame_.keep(std::move(owner_));
        return std::move(frame_);
    }

private:
    std::shared_ptr<const void> owner_;
    websocket_frame frame_;
};

// The message as one JSON object, spliced from the raw parts in Session.deserialize's key
// order; "buffers" only in the text form, as jupyter_server's binary form pops it.
void legacy_json(const message& msg, channel ch, bool with_buffers_key, frame_builder& out) {
    out.glue(R"({"header":)");
    out.part(msg.header);
    out.glue(R"(,"msg_id":)");
    out.glue(json_string(msg.msg_id));
    out.glue(R"(,"msg_type":)");
    out.glue(json_string(msg.msg_type));
    out.glue(R"(,"parent_header":)");
    out.part(msg.parent_header);
    out.glue(R"(,"metadata":)");
    out.part(msg.metadata);
    out.glue(R"(,"content":)");
    out.part(msg.content);
    if (with_buffers_key) out.glue(R"(,"buffers":[])");
    out.glue(R"(,"channel":")");
    out.glue(to_string(ch));
    out.glue(R"("})");
}

websocket_frame to_legacy(const message& msg, channel ch, std::shared_ptr<const void> owner) {
    if (msg.buffers.empty()) {
        frame_builder out(std::move(owner));
        legacy_json(msg, ch, true, out);
        return out.finish(false);
    }
    // jupyter_server's serialize_binary_message: u32 BE nbufs, u32 BE start offset of each part.
    frame_builder body(owner);
    legacy_json(msg, ch, false, body);
    const websocket_frame json_part = body.finish(false);
    const std::size_t nbufs = 1 + msg.buffers.size();

    std::string table;
    table.reserve(4 * (nbufs + 1));
    put_u32_be(table, static_cast<std::uint32_t>(nbufs));
    std::size_t offset = 4 * (nbufs + 1);
    put_u32_be(table, static_cast<std::uint32_t>(offset));
    offset += json_part.size();
    for (const auto& b : msg.buffers) {
        put_u32_be(table, static_cast<std::uint32_t>(offset));
        offset += b.size();
    }
    frame_builder out(std::move(owner));
    out.glue(table);
    out.frame(json_part);
    for (const auto& b : msg.buffers) out.part(b);
    return out.finish(true);
}

websocket_frame to_v1(const message& msg, channel ch, std::shared_ptr<const void> owner) {
    // jupyter_server's serialize_msg_to_ws_v1: u64 LE count, then count u64 LE offsets (start of
    // the channel, start of each part, end of the frame), then the bytes.
    const std::string_view channel_name = to_string(ch);
    std::vector<std::string_view> parts{msg.header, msg.parent_header, msg.metadata, msg.content};
    for (const auto& b : msg.buffers) parts.emplace_back(b);

    const std::uint64_t count = 1 + parts.size() + 1;
    std::uint64_t offset = 8 * (1 + count);
    std::string table;
    table.reserve(static_cast<std::size_t>(offset) + channel_name.size());
    put_u64_le(table, count);
    put_u64_le(table, offset);
    offset += channel_name.size();
    put_u64_le(table, offset);
    for (auto p : parts) {
        offset += p.size();
        put_u64_le(table, offset);
    }
    table += channel_name;
    frame_builder out(std::move(owner));
    out.glue(table);
    for (auto p : parts) out.part(p);
    return out.finish(true);
}

// ---- client -> kernel ---------------------------------------------------------------------

client_message fail(client_message&& cm, std::error_code& ec, wire_error e) {
    ec = e;
    return std::move(cm);
}

// Reads header fields into cm.msg; returns the error, if any.
std::optional<wire_error> take_header(const json& header, client_message& cm) {
    if (!header.is_object()) return wire_error::malformed_json;
    cm.msg.header = header.dump(-1, ' ', false, replace_invalid);
    // msg_id is kept even when msg_type is missing, so the error reply can name the request.
    const auto id = header.find("msg_id");
    if (id != header.end() && id->is_string()) cm.msg.msg_id = id->get<std::string>();
    const auto type = header.find("msg_type");
    if (cm.msg.msg_id.empty() || type == header.end() || !type->is_string())
        return wire_error::missing_header_field;
    cm.msg.msg_type = type->get<std::string>();
    const auto session = header.find("session");
    if (session != header.end() && session->is_string())
        cm.msg.session = session->get<std::string>();
    return std::nullopt;
}

std::optional<wire_error> take_channel(std::string_view name, bool present, client_message& cm) {
    if (!present || name.empty()) return wire_error::missing_channel;
    const auto ch = channel_from_string(name);
    if (!ch) return wire_error::unknown_channel;
    cm.ch = *ch;
    return std::nullopt;
}

// The legacy JSON body (the text frame, or part 0 of the binary frame).
client_message from_legacy_json(std::string_view text, std::vector<payload> buffers,
                                std::error_code& ec) {
    client_message cm;
    if (!is_valid_utf8(text)) return fail(std::move(cm), ec, wire_error::invalid_utf8);
    const parsed_json parsed = parse_untrusted_json(text);
    if (parsed.status == json_check::too_deep) return fail(std::move(cm), ec, wire_error::too_deep);
    const json& doc = parsed.value;
    if (!parsed.ok() || !doc.is_object())
        return fail(std::move(cm), ec, wire_error::malformed_json);

    // Header first, so any later error can still be addressed to the client's request.
    const auto header = doc.find("header");
    if (header == doc.end()) return fail(std::move(cm), ec, wire_error::missing_header_field);
    if (auto e = take_header(*header, cm)) return fail(std::move(cm), ec, *e);

    const auto channel_it = doc.find("channel");
    if (channel_it != doc.end() && !channel_it->is_string() && !channel_it->is_null())
        return fail(std::move(cm), ec, wire_error::unknown_channel);
    const bool has_channel = channel_it != doc.end() && channel_it->is_string();
    if (auto e = take_channel(has_channel ? channel_it->get_ref<const std::string&>() : "",
                              has_channel, cm))
        return fail(std::move(cm), ec, *e);

    // A missing part is an empty object, as clients that omit metadata expect; a present part
    // must be an object.
    std::string content;
    std::string* const targets[] = {&cm.msg.parent_header, &cm.msg.metadata, &content};
    const char* const names[] = {"parent_header", "metadata", "content"};
    for (std::size_t i = 0; i < 3; ++i) {
        const auto it = doc.find(names[i]);
        if (it == doc.end() || it->is_null()) {
            *targets[i] = "{}";
            continue;
        }
        if (!it->is_object()) return fail(std::move(cm), ec, wire_error::malformed_json);
        *targets[i] = it->dump(-1, ' ', false, replace_invalid);
        if (i == 0) {
            const auto pid = it->find("msg_id");
            if (pid != it->end() && pid->is_string())
                cm.msg.parent_msg_id = pid->get<std::string>();
        }
    }
    cm.msg.content = std::move(content);
    cm.msg.buffers = std::move(buffers);
    ec.clear();
    return cm;
}

client_message from_legacy_binary(std::string_view data, std::error_code& ec) {
    // jupyter_server's deserialize_binary_message: u32 BE nbufs, nbufs u32 BE start offsets;
    // each part runs to the next start, the last to the end of the frame.
    if (data.size() < 4) return fail({}, ec, wire_error::bad_offsets);
    const std::uint64_t nbufs = get_u32_be(data, 0);
    if (nbufs == 0 || 4 * (nbufs + 1) > data.size()) return fail({}, ec, wire_error::bad_offsets);
    const auto starts = ascending_offsets(data, nbufs, 4, get_u32_be);
    if (!starts) return fail({}, ec, wire_error::bad_offsets);
    auto part = [&](std::uint64_t i) {
        const std::uint64_t stop = i + 1 < nbufs ? (*starts)[i + 1] : data.size();
        return data.substr((*starts)[i], stop - (*starts)[i]);
    };
    std::vector<payload> buffers;
    buffers.reserve(nbufs - 1);
    for (std::uint64_t i = 1; i < nbufs; ++i) buffers.emplace_back(std::string(part(i)));
    return from_legacy_json(part(0), std::move(buffers), ec);
}

client_message from_v1(std::string_view data, std::error_code& ec) {
    if (data.size() < 8) return fail({}, ec, wire_error::bad_offsets);
    const std::uint64_t n = get_u64_le(data, 0);
    // channel, header, parent, metadata, content starts plus the end: at least 6 offsets. The
    // table must fit in the frame; compare by division so a huge n cannot overflow.
    if (n < 6 || n > (data.size() - 8) / 8) return fail({}, ec, wire_error::bad_offsets);
    const auto offsets = ascending_offsets(data, n, 8, get_u64_le);
    if (!offsets) return fail({}, ec, wire_error::bad_offsets);
    auto part = [&](std::uint64_t i) {
        return data.substr((*offsets)[i], (*offsets)[i + 1] - (*offsets)[i]);
    };

    client_message cm;
    // Header first (it is small and gives the routing fields), then the channel, then the
    // parts that are relayed as bytes and only validated.
    const std::string_view header_text = part(1);
    const parsed_json header = parse_untrusted_json(header_text);
    if (header.status == json_check::too_deep) return fail(std::move(cm), ec, wire_error::too_deep);
    if (!header.ok()) return fail(std::move(cm), ec, wire_error::malformed_json);
    if (auto e = take_header(header.value, cm)) return fail(std::move(cm), ec, *e);
    cm.msg.header = std::string(header_text);  // keep the client's bytes, not our dump

    const std::string_view channel_name = part(0);
    if (auto e = take_channel(channel_name, !channel_name.empty(), cm))
        return fail(std::move(cm), ec, *e);

    const std::string_view parent = part(2), metadata = part(3), content = part(4);
    if (!is_json_object(metadata) || !is_json_object(content))
        return fail(std::move(cm), ec, wire_error::malformed_json);
    const parsed_json parent_parsed = parse_untrusted_json(parent);
    if (parent_parsed.status == json_check::too_deep)
        return fail(std::move(cm), ec, wire_error::too_deep);
    const json& parent_doc = parent_parsed.value;
    if (!parent_parsed.ok() || !parent_doc.is_object())
        return fail(std::move(cm), ec, wire_error::malformed_json);
    const auto pid = parent_doc.find("msg_id");
    if (pid != parent_doc.end() && pid->is_string()) cm.msg.parent_msg_id = pid->get<std::string>();

    cm.msg.parent_header = std::string(parent);
    cm.msg.metadata = std::string(metadata);
    cm.msg.content = std::string(content);
    cm.msg.buffers.reserve(n - 6);
    for (std::uint64_t i = 5; i + 1 < n; ++i) cm.msg.buffers.emplace_back(part(i));
    ec.clear();
    return cm;
}

}  // namespace

websocket_frame to_websocket(const message& msg, channel ch, websocket_format format) {
    return format == websocket_format::v1 ? to_v1(msg, ch, nullptr) : to_legacy(msg, ch, nullptr);
}

websocket_frame to_websocket(std::shared_ptr<const message> msg, channel ch,
                             websocket_format format) {
    const message& m = *msg;
    return format == websocket_format::v1 ? to_v1(m, ch, std::move(msg))
                                          : to_legacy(m, ch, std::move(msg));
}

client_message from_websocket(std::string_view data, bool binary, websocket_format format,
                              std::error_code& ec) {
    ec.clear();
    if (data.empty()) return fail({}, ec, wire_error::empty_frame);
    if (!binary) {
        // v1 clients only send binary frames; a text frame is still the legacy JSON form, and
        // reading it as such costs nothing.
        return from_legacy_json(data, {}, ec);
    }
    return format == websocket_format::v1 ? from_v1(data, ec) : from_legacy_binary(data, ec);
}

}  // namespace callisto::kernelproto
