#include "kernelproto/stream_truncation.hpp"

#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace kp = callisto::kernelproto;
using nlohmann::json;

namespace {

// Every cut of `content` is either refused or valid JSON of at most max bytes whose text is a
// prefix of the original text, with every other field unchanged.
void check_every_cut(const std::string& content) {
    const json original = json::parse(content);
    const std::string text = original["text"];
    std::size_t longest = 0;
    for (std::size_t max = 0; max <= content.size() + 2; ++max) {
        CAPTURE(max);
        auto cut = kp::truncate_stream_text(content, max);
        if (!cut) continue;
        CHECK(cut->size() <= std::max(max, content.size()));
        const json parsed = json::parse(*cut, nullptr, false);
        REQUIRE_FALSE(parsed.is_discarded());
        const std::string kept = parsed["text"];
        CHECK(text.compare(0, kept.size(), kept) == 0);
        CHECK(kept.size() >= longest);  // more room never keeps less
        longest = kept.size();
        json rest = parsed, rest_original = original;
        rest.erase("text");
        rest_original.erase("text");
        CHECK(rest == rest_original);
    }
    CHECK(longest == text.size());
}

}  // namespace

TEST_CASE("truncate_stream_text leaves content that fits unchanged") {
    const std::string c = R"({"name": "stdout", "text": "hello\n"})";
    CHECK(kp::truncate_stream_text(c, c.size()) == c);
    CHECK(kp::truncate_stream_text(c, 1u << 20) == c);
}

TEST_CASE("truncate_stream_text cuts plain text to the byte") {
    const std::string c = R"({"name":"stdout","text":"0123456789"})";
    auto cut = kp::truncate_stream_text(c, c.size() - 4);
    REQUIRE(cut);
    CHECK(*cut == R"({"name":"stdout","text":"012345"})");
}

TEST_CASE("truncate_stream_text never splits an escape, a UTF-8 sequence or a surrogate pair") {
    check_every_cut(R"({"name":"stdout","text":"a\nb\"c\\d\/e\u00e9f\ud83d\ude00g\tz"})");
    check_every_cut(
        "{\"name\":\"stdout\",\"text\":\"h\xc3\xa9llo \xe4\xb8\xad\xe6\x96\x87 "
        "\xf0\x9f\x98\x80!\"}");
    check_every_cut(R"({"name":"stderr","text":"\\\\\\\"\"\"\\n"})");
    check_every_cut(R"({"name":"stdout","text":""})");
}

TEST_CASE("truncate_stream_text keeps the other fields, before and after the text") {
    check_every_cut(R"({"meta": {"a": "}\"{", "b": [1, "text", {"text": "x"}]}, "text": "abcdef",)"
                    R"( "name": "stdout", "n": -1.5e3, "t": true, "z": null})");
    check_every_cut("  {\n \"text\" :\t\"spaced out text\" , \"name\" : \"stdout\" }  ");
}

TEST_CASE("truncate_stream_text refuses what is not a stream content, without crashing") {
    for (const std::string bad :
         {"", "   ", "[]", "\"text\"", "{}", R"({"name":"stdout"})", R"({"text": 5})",
          R"({"text": ["a"]})", R"({"text": null})", R"({"text": "unterminated)", R"({"text")",
          R"({"text":)", R"({"a": {"b": "c"}, "text)", R"({"a" 1, "text": "x"})", R"({"a": "\)",
          "{\"text\": \"\\", R"({"nested": {"text": "inner"}})"}) {
        CAPTURE(bad);
        for (std::size_t max : {std::size_t{0}, std::size_t{3}, std::size_t{20}, std::size_t{1000}})
            CHECK_FALSE(kp::truncate_stream_text(bad, max).has_value());
    }
}

TEST_CASE("truncate_stream_text refuses a limit with no room for a character of text") {
    const std::string c = R"({"name":"stdout","text":"abc"})";
    const std::size_t overhead = c.size() - 3;
    CHECK_FALSE(kp::truncate_stream_text(c, overhead).has_value());
    CHECK_FALSE(kp::truncate_stream_text(c, 0).has_value());
    CHECK(kp::truncate_stream_text(c, overhead + 1) == R"({"name":"stdout","text":"a"})");
    // A 4-byte character needs all 4 bytes of room.
    const std::string emoji = "{\"text\":\"\xf0\x9f\x98\x80\"}";
    CHECK_FALSE(kp::truncate_stream_text(emoji, emoji.size() - 1).has_value());
}

TEST_CASE("truncate_stream_text on a large message cuts near the limit") {
    std::string text;
    for (int i = 0; i < 200000; ++i) text += "line " + std::to_string(i) + "\\n";
    const std::string c = R"({"name":"stdout","text":")" + text + "\"}";
    auto cut = kp::truncate_stream_text(c, 100000);
    REQUIRE(cut);
    CHECK(cut->size() <= 100000);
    CHECK(cut->size() >= 100000 - 1);  // at most the "\n" escape is left out
    CHECK_FALSE(json::parse(*cut, nullptr, false).is_discarded());
}
