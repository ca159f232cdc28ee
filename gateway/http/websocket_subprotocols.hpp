#pragma once
// What a WebSocket upgrade offers in Sec-WebSocket-Protocol. Besides the formats a route
// speaks (the Jupyter v1 kernel protocol), a browser may carry its token there: a browser
// cannot set Authorization on a WebSocket, and a ?token= in the URL would put the secret where
// URLs go (proxy logs, history, error reports). The web UI offers two entries:
//
//   callisto.auth                  selected by the server when the route selects nothing else
//                                  (RFC 6455: a browser fails a handshake that offered
//                                  protocols and got none back);
//   callisto.token.<hex>           the token's bytes in lower-case hex; never selected, so
//                                  never echoed in the answer.

#include <string>
#include <string_view>

namespace callisto::gateway {

inline constexpr std::string_view auth_subprotocol = "callisto.auth";
inline constexpr std::string_view token_subprotocol_prefix = "callisto.token.";

// Whether the comma-separated offer names `name` (surrounding blanks ignored).
bool offers_subprotocol(std::string_view offer, std::string_view name);

// The token carried by a callisto.token.<hex> entry, "" when there is none or its hex is
// malformed (odd length, a character outside 0-9a-f).
std::string token_in_subprotocols(std::string_view offer);

}  // namespace callisto::gateway
