#include "gateway/http/request_dispatcher.hpp"

#include <algorithm>

#include "common/byte_size.hpp"
#include "gateway/http/beast.hpp"
#include "gateway/http/json_response.hpp"

namespace callisto::gateway {
namespace {

// A missing or wrong token gets the same answer on every route: 401 with a challenge, as Kernel
// Gateway answers (and MCP hosts need to begin their sign-in). A valid token that may not do
// something gets 403 from the handler.
http_response unauthorized() {
    auto res = error_response(http::status::unauthorized,
                              "a valid token is required: 'Authorization: token T' (or 'Bearer "
                              "T') or '?token=T'");
    res.set(http::field::www_authenticate, "Bearer realm=\"callisto\"");
    return res;
}

}  // namespace

request_dispatcher::request_dispatcher(const user_directory& auth, bool serves_web_root,
                                       std::size_t default_body_limit,
                                       std::string default_body_limit_note)
    : auth_(auth),
      serves_web_root_(serves_web_root),
      default_body_limit_(default_body_limit),
      default_body_limit_note_(std::move(default_body_limit_note)) {}

void request_dispatcher::handle(route_kind kind, handler h, route_options options) {
    routes_[static_cast<std::size_t>(kind)] = {std::move(h), std::move(options)};
}

header_verdict request_dispatcher::on_header(std::string_view method, std::string_view target,
                                             std::string_view authorization,
                                             std::string_view websocket_offer,
                                             bool websocket_upgrade) const {
    header_verdict v;
    v.where = match_route(method, target, serves_web_root_);
    v.who = auth_.authenticate(authorization, v.where.query,
                               websocket_upgrade ? websocket_offer : std::string_view());
    const auto& e = routes_[static_cast<std::size_t>(v.where.kind)];
    v.body_limit = e.options.body_limit ? e.options.body_limit : default_body_limit_;
    v.body_limit_note = e.options.body_limit && !e.options.body_limit_note.empty()
                            ? std::string_view(e.options.body_limit_note)
                            : std::string_view(default_body_limit_note_);
    if (is_public_route(v.where.kind) || e.options.without_token || v.who) {
        if (e.options.admit) v.refusal = e.options.admit();
        return v;
    }
    switch (v.where.kind) {
        // Unknown paths answer the same with or without a token (after the body, as before).
        case route_kind::not_found:
        case route_kind::bad_v1_path:
        case route_kind::method_not_allowed: return v;
        default:
            v.refusal = e.options.unauthorized ? e.options.unauthorized() : unauthorized();
            return v;
    }
}

void request_dispatcher::dispatch(incoming_request in) const {
    switch (in.where.kind) {
        case route_kind::not_found:
            return in.respond(error_response(http::status::not_found, "not found"));
        case route_kind::bad_v1_path:
            return in.respond(error_response(http::status::bad_request,
                                             "invalid path: empty, '.' and '..' segments, "
                                             "encoded '/' and NUL are refused"));
        case route_kind::method_not_allowed: {
            auto res = error_response(http::status::method_not_allowed, "method not allowed");
            res.set(http::field::allow, in.where.allow);
            return in.respond(std::move(res));
        }
        default: break;
    }
    const auto& e = routes_[static_cast<std::size_t>(in.where.kind)];
    if (!e.run) return in.respond(error_response(http::status::not_found, "not found"));
    e.run(std::move(in));
}

http_response body_too_large(std::optional<std::uint64_t> length, std::size_t limit,
                             std::string_view note) {
    std::string message = "request body ";
    if (length) message += "of " + std::to_string(*length) + " bytes ";
    message += "is larger than this route's limit of " + describe_bytes(limit);
    if (!note.empty()) message += ", " + std::string(note);
    auto res = error_response(http::status::payload_too_large, message);
    res.keep_alive(false);
    return res;
}

}  // namespace callisto::gateway
