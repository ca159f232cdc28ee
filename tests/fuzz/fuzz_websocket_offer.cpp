// A Sec-WebSocket-Protocol header as a client sends it, before any token was checked: the
// token found in it, if any, is the hex entry decoded (so a round trip reproduces the entry),
// and looking for a name never throws or reads past the header.
#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/http/websocket_subprotocols.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace callisto::gateway;
    const std::string_view offer(reinterpret_cast<const char*>(data), size);
    (void)offers_subprotocol(offer, auth_subprotocol);
    const std::string token = token_in_subprotocols(offer);
    if (!token.empty()) {
        static const char digits[] = "0123456789abcdef";
        std::string entry(token_subprotocol_prefix);
        for (unsigned char c : token) {
            entry.push_back(digits[c >> 4]);
            entry.push_back(digits[c & 15]);
        }
        if (!offers_subprotocol(offer, entry)) __builtin_trap();  // found only what is there
    }
    return 0;
}
