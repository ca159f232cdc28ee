#include "kernelproto/untrusted_json.hpp"

#include <string>
#include <thread>

#include <doctest/doctest.h>

namespace kp = callisto::kernelproto;

namespace {

std::string nested_arrays(std::size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace

TEST_CASE("untrusted json: a document nested past the limit is refused as too deep") {
    for (std::size_t depth : {kp::max_json_depth + 1, std::size_t{100000}}) {
        CAPTURE(depth);
        auto parsed = kp::parse_untrusted_json(nested_arrays(depth));
        CHECK(parsed.status == kp::json_check::too_deep);
        CHECK(parsed.value.is_discarded());
        CHECK(parsed.problem() == "nested deeper than 1000 levels");
    }
    // An object member's value counts as a level too.
    std::string objects;
    for (std::size_t i = 0; i < kp::max_json_depth + 1; ++i) objects += "{\"x\":";
    objects += "1" + std::string(kp::max_json_depth + 1, '}');
    CHECK(kp::parse_untrusted_json(objects).status == kp::json_check::too_deep);
}

TEST_CASE("untrusted json: malformed text and lone surrogates are refused as not valid JSON") {
    for (std::string bad : {"", "{", "[1,]", "{\"a\":1}x", "\"\\ud800\""}) {
        CAPTURE(bad);
        auto parsed = kp::parse_untrusted_json(bad);
        CHECK(parsed.status == kp::json_check::malformed);
        CHECK(parsed.value.is_discarded());
        CHECK(parsed.problem() == "not valid JSON");
    }
}

TEST_CASE("untrusted json: a document at the limit parses and survives the recursive walks") {
    // What the limit protects: copy, dump and compare recurse once per level. At the limit they
    // must fit a thread's default stack with room to spare (ASan builds have larger frames).
    auto parsed = kp::parse_untrusted_json(nested_arrays(kp::max_json_depth));
    REQUIRE(parsed.ok());
    std::string dumped;
    bool equal = false;
    std::thread([&] {
        nlohmann::json copy = parsed.value;
        dumped = copy.dump();
        equal = copy == parsed.value;
    }).join();
    CHECK(dumped == nested_arrays(kp::max_json_depth));
    CHECK(equal);
}

TEST_CASE("untrusted json: ordinary documents parse as nlohmann would") {
    auto parsed =
        kp::parse_untrusted_json(R"js({"code": "print(1)", "n": [1, 2.5, null, true]})js");
    REQUIRE(parsed.ok());
    CHECK(parsed.value["code"] == "print(1)");
    CHECK(parsed.value["n"].size() == 4);
    CHECK(parsed.problem().empty());
}
