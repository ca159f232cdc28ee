#pragma once
// Shared test helpers: readable failure output for error codes, and bytes written as hex.

#include <ostream>
#include <string>
#include <string_view>
#include <system_error>

#include <doctest/doctest.h>

#include "kernelproto/wire_error.hpp"

namespace doctest {

template <>
struct StringMaker<std::error_code> {
    static String convert(const std::error_code& ec) {
        const std::string s = std::string(ec.category().name()) + ":" + std::to_string(ec.value()) +
                              " (" + ec.message() + ")";
        return String(s.c_str());
    }
};

template <>
struct StringMaker<callisto::kernelproto::wire_error> {
    static String convert(callisto::kernelproto::wire_error e) {
        return StringMaker<std::error_code>::convert(make_error_code(e));
    }
};

}  // namespace doctest

namespace callisto::kernelproto::testing {

// The bytes that hex digits spell, two digits a byte ("0a1b" is "\x0a\x1b"): test vectors as
// their documents print them.
inline std::string from_hex(std::string_view hex) {
    std::string out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    return out;
}

}  // namespace callisto::kernelproto::testing
