#pragma once
// The server's route table (gateway/routes.cpp) as the server matches it, with the web UI's
// files (--web-root) or without, for the tests of each API's routes.

#include <stdexcept>
#include <string>
#include <string_view>

#include "gateway/routes.hpp"

namespace callisto::gateway {

inline route_match match_route(std::string_view method, std::string_view target, bool web_ui) {
    static const router without = route_table_router(server_config{});
    static const router with = [] {
        server_config config;
        config.web_root = "/srv/callisto-web";
        return route_table_router(config);
    }();
    return (web_ui ? with : without).match(method, target);
}

// Who may call the table's route of this name.
inline route_access access_of(std::string_view name) {
    for (const auto& row : route_table())
        if (row.spec.name == name) return row.spec.access;
    throw std::invalid_argument("no route named " + std::string(name));
}

}  // namespace callisto::gateway
