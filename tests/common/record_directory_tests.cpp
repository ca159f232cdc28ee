#include "common/json_record_store.hpp"
#include "common/record_directory.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

namespace fs = std::filesystem;

TEST_CASE("a record directory drops the temporary file of a save a crash interrupted") {
    const auto dir = fs::temp_directory_path() / ("callisto-records-" + std::to_string(::getpid()));
    {
        callisto::record_directory records(dir, "kernel", callisto::record_directory::sync::never,
                                           {});
        CHECK(records.save("0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11", "{}") == "");
        std::ofstream(dir / ".0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11.json.tmp") << "{\"half";
        const auto loaded = records.load();
        REQUIRE(loaded.size() == 1);
        CHECK(loaded[0].text == "{}");
        CHECK_FALSE(fs::exists(dir / ".0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11.json.tmp"));
        CHECK(records.save("../../etc/passwd", "x").find("not a kernel id") == 0);
    }
    fs::remove_all(dir);
}

namespace {

// The least a record needs: an id, and its JSON both ways.
struct note {
    std::string id;
    std::string text;

    nlohmann::json to_json() const { return {{"id", id}, {"text", text}}; }
    static note from_json(const nlohmann::json& j) {
        if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
            throw std::invalid_argument("no 'text'");
        return {j.value("id", ""), j["text"].get<std::string>()};
    }
};

}  // namespace

TEST_CASE("a JSON record store reads back what it saved and removes each record it cannot take") {
    const auto dir = fs::temp_directory_path() / ("callisto-notes-" + std::to_string(::getpid()));
    {
        callisto::json_record_store<note> notes(dir, "note",
                                                callisto::record_directory::sync::never, {});
        CHECK(notes.save({"a1", "kept"}) == "");
        CHECK(notes.save({"b2", "refused by the check"}) == "");
        std::ofstream(dir / "c3.json") << "{\"id\": \"c3\", \"te";  // torn
        std::ofstream(dir / "d4.json") << R"({"id": "d4"})";        // from_json refuses it
        std::ofstream(dir / "e5.json") << R"({"id": "a1", "text": "moved"})";  // not its name

        const auto loaded = notes.load([](const note& n) {
            if (n.id == "b2") throw std::invalid_argument("checked out");
        });
        REQUIRE(loaded.records.size() == 1);
        CHECK(loaded.records[0].text == "kept");
        auto sorted = loaded.problems;  // in the directory's order
        std::sort(sorted.begin(), sorted.end());
        std::string problems;
        for (const auto& p : sorted) problems += p + "\n";
        // A file that is not JSON says where the parser stopped.
        CHECK(problems.find("b2.json: checked out\nc3.json: not JSON ([json.exception.") == 0);
        CHECK(problems.find(")\nd4.json: no 'text'\ne5.json: its id is not its file's name\n") !=
              std::string::npos);
        // Each one refused is gone; the next load finds only the kept record, and nothing to say.
        const auto again = notes.load();
        CHECK(again.records.size() == 1);
        CHECK(again.problems.empty());
        notes.remove("a1");
        CHECK(notes.load().records.empty());
    }
    fs::remove_all(dir);
}
