#include "kernelproto/json_validator.hpp"

#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using callisto::kernelproto::is_valid_json;

TEST_CASE("json validator accepts well-formed JSON of every kind") {
    for (std::string text : std::vector<std::string>{
             "{}", "[]", " {\"a\": [1, -2.5e+3, 0, 0.1, 1E5, true, false, null]} ", "\"x\"", "0",
             "-0", "123", "{\"a\":{\"b\":{\"c\":[[],[{}]]}}}",
             "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"",
             "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "[\n\t1 ,\r 2 ]"}) {
        CAPTURE(text);
        CHECK(is_valid_json(text));
        CHECK(nlohmann::json::accept(text));
    }
}

TEST_CASE("json validator refuses malformed JSON") {
    for (std::string text : std::vector<std::string>{"",
                                                     " ",
                                                     "{",
                                                     "}",
                                                     "[1,]",
                                                     "{\"a\":1,}",
                                                     "{\"a\" 1}",
                                                     "{a:1}",
                                                     "{'a':1}",
                                                     "01",
                                                     "1.",
                                                     ".5",
                                                     "-",
                                                     "1e",
                                                     "+1",
                                                     "tru",
                                                     "nul",
                                                     "[1 2]",
                                                     "\"abc",
                                                     "\"\\x\"",
                                                     "\"\\u12G4\"",
                                                     "\"tab\there\"",
                                                     "{} {}",
                                                     "[",
                                                     "[[[]]",
                                                     "\"\xc3\x28\"",
                                                     "\"\xed\xa0\x80\"",
                                                     "\"\xf4\x90\x80\x80\"",
                                                     "\"\xc0\xaf\"",
                                                     "\"\xe0\x80\xaf\"",
                                                     "\"\xff\"",
                                                     "NaN",
                                                     "[1]]",
                                                     "{\"a\":}",
                                                     std::string("\"a\0b\"", 5)}) {
        CAPTURE(text);
        CHECK_FALSE(is_valid_json(text));
    }
}

TEST_CASE("json validator accepts lone surrogate escapes, as Python and JavaScript do") {
    CHECK(is_valid_json("\"\\ud800\""));
}

TEST_CASE("json validator refuses nesting deeper than its limit, without recursion") {
    std::string deep(200000, '[');
    deep += std::string(200000, ']');
    CHECK_FALSE(is_valid_json(deep));
    CHECK(is_valid_json(deep, 300000));
}

TEST_CASE("json validator agrees with nlohmann on mutated documents") {
    const std::vector<std::string> seeds = {
        R"({"name":"stdout","text":"hello\nworld","n":[1,2.5,-3e2,true,null],"o":{"k":"v"}})",
        R"({"data":{"text/plain":"2","image/png":"iVBORw0KGgo="},"metadata":{},"execution_count":1})",
        "{\"t\":\"caf\xc3\xa9\",\"e\":\"\\u00e9\\n\\\"q\\\"\"}"};
    std::mt19937 rng(20261122);
    const std::string alphabet = "{}[]\",:\\ 0123456789.eE+-truefalsn\x80\xc3\xa9\xff\t\nu";
    int compared = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string doc = seeds[rng() % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits && !doc.empty(); ++e) {
            const std::size_t at = rng() % doc.size();
            switch (rng() % 3) {
                case 0: doc[at] = alphabet[rng() % alphabet.size()]; break;
                case 1: doc.erase(at, 1); break;
                default: doc.insert(at, 1, alphabet[rng() % alphabet.size()]);
            }
        }
        // nlohmann refuses lone surrogate escapes, which this validator accepts on purpose.
        if (doc.find("\\u") != std::string::npos) continue;
        CAPTURE(doc);
        CHECK(is_valid_json(doc) == nlohmann::json::accept(doc));
        ++compared;
    }
    CHECK(compared > 10000);
}

// The string scan reads eight bytes at a time: every byte that ends a plain run must be found at
// every offset within a word, and at the very end of the text.
TEST_CASE("json validator finds what ends a plain string run at every offset of a word") {
    for (std::size_t pad = 0; pad < 20; ++pad) {
        const std::string run(pad, 'x');
        CAPTURE(pad);
        CHECK(is_valid_json("\"" + run + "\""));
        CHECK(is_valid_json("[\"" + run + "\\n" + run + "\",1]"));
        CHECK(is_valid_json("\"" + run + "\xc3\xa9" + run + "\""));
        CHECK(is_valid_json("\"" + run + "\x7f" + run + "\""));  // DEL is allowed raw
        CHECK_FALSE(is_valid_json("\"" + run));                  // unterminated
        CHECK_FALSE(is_valid_json("\"" + run + "\x1f" + run + "\""));
        CHECK_FALSE(is_valid_json("\"" + run + std::string(1, '\0') + run + "\""));
        CHECK_FALSE(is_valid_json("\"" + run + "\xc3" + run + "\""));  // truncated sequence
        CHECK_FALSE(is_valid_json("\"" + run + "\\q" + run + "\""));
        CHECK_FALSE(is_valid_json("\"" + run + "\"" + run + "\""));  // text after the value
    }
}
