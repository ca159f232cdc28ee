#pragma once
// Shared test helpers: readable failure output for error codes.

#include <ostream>
#include <string>
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
