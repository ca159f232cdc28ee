// The caps on kernel output fields no stream budget covers: an error's fields, a traceback.

#include "gateway/kernels/output/output_fields.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace callisto::gateway::kernels;

TEST_CASE("cap_text keeps a text that fits, and says nothing was cut") {
    std::size_t cut = 99;
    CHECK(cap_text("division by zero", 16, cut) == "division by zero");
    CHECK(cut == 0);
    CHECK(cap_text("", 0, cut).empty());
    CHECK(cut == 0);
}

TEST_CASE("cap_text keeps head and tail around the stream budget's marker, within the cap") {
    const std::string text = "HEAD" + std::string(10'000, 'x') + "TAIL";
    std::size_t cut = 0;
    const auto out = cap_text(text, 200, cut);
    CHECK(out.size() <= 200);
    CHECK(out.starts_with("HEAD"));
    CHECK(out.ends_with("TAIL"));
    CHECK(out.find(truncation_marker(cut)) != std::string::npos);
    CHECK(cut == text.size() - (out.size() - truncation_marker(cut).size()));
}

TEST_CASE("cap_text never splits a UTF-8 character") {
    std::string text;
    for (int i = 0; i < 1000; ++i) text += "é€😀";  // 2, 3 and 4 bytes
    for (std::size_t max : {60u, 61u, 62u, 63u, 64u, 65u, 97u, 101u}) {
        INFO(max);
        std::size_t cut = 0;
        const auto out = cap_text(text, max, cut);
        CHECK(out.size() <= max);
        const auto marker = out.find("\n[...");
        REQUIRE(marker != std::string::npos);
        const auto head = out.substr(0, marker);
        const auto tail = out.substr(out.find("...]\n") + 5);
        CHECK(text.starts_with(head));
        CHECK(text.ends_with(tail));
        // Whole characters: neither part starts with a continuation byte nor ends mid-sequence.
        if (!tail.empty()) CHECK((static_cast<unsigned char>(tail[0]) & 0xC0) != 0x80);
        CHECK((static_cast<unsigned char>(text[head.size()]) & 0xC0) != 0x80);
        CHECK(head.size() + tail.size() + cut == text.size());
    }
}

TEST_CASE("cap_text with a cap smaller than its marker keeps only a head") {
    std::size_t cut = 0;
    const std::string text(1000, 'y');
    const auto out = cap_text(text, 10, cut);
    CHECK(out == std::string(10, 'y'));
    CHECK(cut == 990);
    CHECK(cap_text(text, 0, cut).empty());
    CHECK(cut == 1000);
}

TEST_CASE("cap_lines keeps a traceback that fits as it is") {
    std::size_t cut = 1;
    std::vector<std::string> lines = {"Traceback", "  File x, line 1", "ValueError: no"};
    CHECK(cap_lines(lines, 1000, cut) == lines);
    CHECK(cut == 0);
    CHECK(cap_lines({}, 0, cut).empty());
}

TEST_CASE("cap_lines cuts one huge line (the evalue again) to half the budget, head and tail") {
    std::vector<std::string> lines = {"Traceback (most recent call last)", "  File x, line 1",
                                      "ValueError: " + std::string(1'000'000, 'v') + "END"};
    std::size_t cut = 0;
    const auto out = cap_lines(lines, 1000, cut);
    REQUIRE(out.size() == 3);
    CHECK(out[0] == lines[0]);
    CHECK(out[1] == lines[1]);
    CHECK(out[2].size() <= 500);
    CHECK(out[2].starts_with("ValueError: "));
    CHECK(out[2].ends_with("END"));
    std::size_t total = 0;
    for (const auto& l : out) total += l.size();
    CHECK(total <= 1000);
    CHECK(cut > 999'000);
}

TEST_CASE("cap_lines drops no line when cutting the long ones was enough") {
    const std::vector<std::string> lines = {std::string(300, 'a'), std::string(300, 'b'),
                                            std::string(300, 'c') + std::string(5000, 'd')};
    std::size_t cut = 0;
    const auto out = cap_lines(lines, 1200, cut);
    REQUIRE(out.size() == 3);
    CHECK(out[0] == lines[0]);
    CHECK(out[1] == lines[1]);
    CHECK(out[2].size() <= 600);
    CHECK(out[2].starts_with("ccc"));
    CHECK(out[2].ends_with("ddd"));
    CHECK(cut == lines[2].size() - (out[2].size() - truncation_marker(cut).size()));
}

TEST_CASE("cap_lines keeps the first and the last lines, one marker for those left out") {
    std::vector<std::string> lines;
    for (int i = 0; i < 1000; ++i) lines.push_back("frame " + std::to_string(i));
    std::size_t cut = 0;
    const auto out = cap_lines(lines, 200, cut);
    CHECK(out.front() == "frame 0");
    CHECK(out.back() == "frame 999");
    std::size_t markers = 0, kept = 0, total = 0;
    for (const auto& l : out) {
        if (l.find("bytes truncated") != std::string::npos) {
            ++markers;
            CHECK(l == truncation_marker(cut));
        } else {
            kept += l.size();
        }
    }
    for (const auto& l : lines) total += l.size();
    CHECK(markers == 1);
    CHECK(kept <= 200);
    CHECK(kept + cut == total);
}

TEST_CASE("record_tail keeps the last bytes after a line saying how much was left out") {
    CHECK(record_tail("short", 10) == "short");
    CHECK(record_tail("0123456789abcdef", 6) == "[... 10 bytes not recorded ...]\nabcdef");
    const std::string text = std::string(10, 'a') + "€€";  // the cut would fall inside a €
    CHECK(record_tail(text, 5) == "[... 13 bytes not recorded ...]\n€");
}

TEST_CASE("cap_error_content cuts an error's name, value and traceback, and keeps the rest") {
    const std::string value = "START" + std::string(100'000, 'e') + "END";
    const nlohmann::json content = {{"status", "error"},
                                    {"ename", std::string(5000, 'N')},
                                    {"evalue", value},
                                    {"traceback", {"Traceback", "ValueError: " + value}},
                                    {"execution_count", 3}};
    auto out = cap_error_content(content.dump(), {.name_bytes = 100, .text_bytes = 2000});
    REQUIRE(out);
    const auto j = nlohmann::json::parse(*out);
    CHECK(j["status"] == "error");
    CHECK(j["execution_count"] == 3);
    CHECK(j["ename"].get<std::string>().size() <= 100);
    const std::string shown = j["evalue"];
    CHECK(shown.size() <= 2000);
    CHECK(shown.starts_with("START"));
    CHECK(shown.ends_with("END"));
    CHECK(j["traceback"][0] == "Traceback");
    CHECK(j["traceback"][1].get<std::string>().ends_with("END"));
    CHECK(out->size() < 4500);
}

TEST_CASE("cap_error_content leaves alone what fits, what is not an object, and odd fields") {
    const nlohmann::json fits = {{"ename", "KeyError"}, {"evalue", "'x'"}, {"traceback", {"t"}}};
    CHECK_FALSE(cap_error_content(fits.dump(), {}));
    CHECK_FALSE(cap_error_content("[1, 2]", {}));
    CHECK_FALSE(cap_error_content("not json", {}));
    CHECK_FALSE(cap_error_content("", {}));
    // A traceback line that is not a string goes when the traceback is cut: nothing in it
    // passes uncounted.
    const nlohmann::json odd = {{"evalue", std::string(5000, 'v')},
                                {"traceback", {1, std::string(5000, 't')}}};
    auto out = cap_error_content(odd.dump(), {.name_bytes = 10, .text_bytes = 100});
    REQUIRE(out);
    const auto j = nlohmann::json::parse(*out);
    CHECK(j["evalue"].get<std::string>().size() <= 100);
    REQUIRE(j["traceback"].size() == 1);
    CHECK(j["traceback"][0].get<std::string>().size() <= 100);
    // One that fits keeps its odd lines: it goes as it is.
    const nlohmann::json small_odd = {{"evalue", "v"}, {"traceback", {1, "t"}}};
    CHECK_FALSE(cap_error_content(small_odd.dump(), {}));
}

TEST_CASE("truncation_marker is the stream budget's marker") {
    CHECK(truncation_marker(42) == "\n[... 42 bytes truncated ...]\n");
}

TEST_CASE("cap_execute_input cuts the echoed code to head and tail, and keeps the rest") {
    const std::string code = "HEAD" + std::string(100'000, 'z') + "TAIL";
    const std::string content = nlohmann::json{{"code", code}, {"execution_count", 7}}.dump();
    auto cut = cap_execute_input(content, 1000);
    REQUIRE(cut);
    auto j = nlohmann::json::parse(*cut);
    const auto kept = j["code"].get<std::string>();
    CHECK(kept.size() <= 1000);
    CHECK(kept.starts_with("HEAD"));
    CHECK(kept.ends_with("TAIL"));
    CHECK(kept.find("bytes truncated ...]") != std::string::npos);
    CHECK(j["execution_count"] == 7);
}

TEST_CASE("cap_execute_input leaves a code that fits, and contents that are not an echo") {
    const std::string small = nlohmann::json{{"code", "print(1)"}, {"execution_count", 1}}.dump();
    CHECK_FALSE(cap_execute_input(small, 1000));
    // Its escapes make the content longer than the code: still within the cap.
    const std::string lines = nlohmann::json{{"code", std::string(900, '\n')}}.dump();
    CHECK_FALSE(cap_execute_input(lines, 1000));
    const std::string big(5000, 'z');
    CHECK_FALSE(cap_execute_input("[\"" + big + "\"]", 1000));
    CHECK_FALSE(cap_execute_input("{\"code\": 1, \"x\": \"" + big + "\"}", 1000));
    CHECK_FALSE(cap_execute_input("{\"code\": \"" + big, 1000));  // not JSON
}
