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

request_dispatcher::request_dispatcher(const user_directory& auth, std::size_t default_body_limit,
                                       std::string default_body_limit_note)
    : auth_(auth),
      default_body_limit_(default_body_limit),
      default_body_limit_note_(std::move(default_body_limit_note)) {}

void request_dispatcher::add(const route_spec& spec, handler h, route_options options) {
    const std::size_t index = router_.add(spec);
    entries_.resize(index + 1);
    entries_[index] = {std::move(h), std::move(options)};
}

header_verdict request_dispatcher::on_header(std::string_view method, std::string_view target,
                                             std::string_view authorization,
                                             std::string_view websocket_offer,
                                             bool websocket_upgrade) const {
    header_verdict v;
    v.where = router_.match(method, target);
    v.who = auth_.authenticate(authorization, v.where.query,
                               websocket_upgrade ? websocket_offer : std::string_view());
    v.body_limit = default_body_limit_;
    v.body_limit_note = default_body_limit_note_;
    // Unknown paths, unsafe /v1 paths and wrong methods answer the same with or without a
    // token (after the body, as before).
    if (!v.where.found()) return v;
    const auto& e = entries_[v.where.index];
    if (e.options.body_limit) {
        v.body_limit = e.options.body_limit;
        if (!e.options.body_limit_note.empty()) v.body_limit_note = e.options.body_limit_note;
    }
    const route_access access = v.where.spec.access;
    const bool user_token = access == route_access::token || access == route_access::admin;
    if (user_token && !v.who) {
        v.refusal = e.options.unauthorized ? e.options.unauthorized() : unauthorized();
        return v;
    }
    if (access == route_access::admin && !v.who->admin) {
        const std::string_view shown = method == "HEAD" ? std::string_view("GET") : method;
        v.refusal = error_response(
            http::status::forbidden,
            std::string(shown) + " " + std::string(v.where.spec.path) + " needs an admin's token");
        return v;
    }
    if (e.options.admit) v.refusal = e.options.admit();
    return v;
}

void request_dispatcher::dispatch(incoming_request in) const {
    switch (in.where.result) {
        case route_match::outcome::not_found:
            return in.respond(error_response(http::status::not_found, "not found"));
        case route_match::outcome::bad_path:
            return in.respond(error_response(http::status::bad_request,
                                             "invalid path: empty, '.' and '..' segments, "
                                             "encoded '/' and NUL are refused"));
        case route_match::outcome::method_not_allowed: {
            auto res = error_response(http::status::method_not_allowed, "method not allowed");
            res.set(http::field::allow, in.where.allow);
            return in.respond(std::move(res));
        }
        case route_match::outcome::found: break;
    }
    const auto& e = entries_[in.where.index];
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
