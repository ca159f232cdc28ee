#pragma once
// What the tests of a parser that says why it refuses check of each input it must refuse.

#include <string>
#include <string_view>

#include <doctest/doctest.h>

namespace callisto::test {

// Checks that `parse(input, error)` refuses each of `inputs` (its result tests false) and says
// why in `error`.
template <class Inputs, class Parse>
void check_each_refused(const Inputs& inputs, Parse parse) {
    for (const auto& input : inputs) {
        INFO(std::string_view(input).substr(0, 120));
        std::string error;
        CHECK_FALSE(parse(input, error));
        CHECK_FALSE(error.empty());
    }
}

}  // namespace callisto::test
