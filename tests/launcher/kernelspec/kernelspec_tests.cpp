#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "launcher/kernelspec/kernelspec.hpp"
#include "tests/launcher/test_support.hpp"

using callisto::launcher::interrupt_mode;
using callisto::launcher::kernelspec;
using callisto::launcher::test::temp_dir;
using callisto::launcher::test::write_file;

namespace {

// The error text of loading `kernel_json` from <tmp>/<dir_name>, or "" when it loads.
std::string load_error(const std::string& kernel_json, const std::string& dir_name = "k") {
    temp_dir tmp;
    write_file(tmp.path() / dir_name / "kernel.json", kernel_json);
    try {
        kernelspec::load(tmp.path() / dir_name);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("load reads every kernel.json field and names the spec after its directory") {
    temp_dir tmp;
    const auto dir = tmp.path() / "Python3";
    write_file(dir / "kernel.json", R"json({
        "argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "interrupt_mode": "message",
        "env": {"A": "1", "B": "{resource_dir}/x"},
        "metadata": {"debugger": true}
    })json");

    const auto spec = kernelspec::load(dir);
    CHECK(spec.name == "python3");
    CHECK(spec.resource_dir == dir);
    CHECK(spec.argv == std::vector<std::string>{"/usr/bin/python3", "-m", "ipykernel_launcher",
                                                "-f", "{connection_file}"});
    CHECK(spec.display_name == "Python 3 (ipykernel)");
    CHECK(spec.language == "python");
    CHECK(spec.interrupt == interrupt_mode::message);
    CHECK(spec.env == std::map<std::string, std::string>{{"A", "1"}, {"B", "{resource_dir}/x"}});
    CHECK(spec.metadata == nlohmann::json{{"debugger", true}});
}

TEST_CASE("load applies jupyter_client's defaults to optional fields") {
    temp_dir tmp;
    write_file(tmp.path() / "minimal" / "kernel.json", R"({"argv": ["k"], "display_name": "K"})");
    const auto spec = kernelspec::load(tmp.path() / "minimal");
    CHECK(spec.language.empty());
    CHECK(spec.interrupt == interrupt_mode::signal);
    CHECK(spec.env.empty());
    CHECK(spec.metadata == nlohmann::json::object());
}

TEST_CASE("spec_json gives kernel.json's fields as read") {
    temp_dir tmp;
    write_file(tmp.path() / "k" / "kernel.json", R"({"argv": ["a", "{connection_file}"],
        "display_name": "D", "language": "l", "env": {"X": "y"}, "metadata": {"m": [1]}})");
    const auto j = kernelspec::load(tmp.path() / "k").spec_json();
    CHECK(j == nlohmann::json::parse(R"({"argv": ["a", "{connection_file}"], "display_name": "D",
        "language": "l", "interrupt_mode": "signal", "env": {"X": "y"}, "metadata": {"m": [1]}})"));
}

TEST_CASE("load rejects every malformed kernel.json with an error naming the file and the field") {
    struct bad_case {
        const char* json;
        const char* expected;
    };
    const bad_case cases[] = {
        {"{", "not valid JSON"},
        {"[]", "top level must be a JSON object"},
        {R"({"display_name": "D"})", "\"argv\" is missing"},
        {R"({"argv": [], "display_name": "D"})", "\"argv\" must be a non-empty array of strings"},
        {R"({"argv": "python", "display_name": "D"})", "\"argv\" must be a non-empty array"},
        {R"({"argv": ["python", 3], "display_name": "D"})", "\"argv\" must be a non-empty array"},
        {R"({"argv": [""], "display_name": "D"})", "\"argv\"[0] must not be empty"},
        {R"({"argv": ["k"]})", "\"display_name\" is missing"},
        {R"({"argv": ["k"], "display_name": 5})", "\"display_name\" must be a string"},
        {R"({"argv": ["k"], "display_name": "D", "language": ["py"]})",
         "\"language\" must be a string"},
        {R"({"argv": ["k"], "display_name": "D", "interrupt_mode": "sometimes"})",
         "\"interrupt_mode\" must be \"signal\" or \"message\""},
        {R"({"argv": ["k"], "display_name": "D", "interrupt_mode": 1})",
         "\"interrupt_mode\" must be \"signal\" or \"message\""},
        {R"({"argv": ["k"], "display_name": "D", "env": ["A=1"]})",
         "\"env\" must be an object of strings"},
        {R"({"argv": ["k"], "display_name": "D", "env": {"A": 1}})",
         "\"env\" value of \"A\" must be a string"},
        {R"({"argv": ["k"], "display_name": "D", "metadata": "x"})",
         "\"metadata\" must be an object"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.json);
        const auto error = load_error(c.json);
        CHECK(error.find("kernel.json") != std::string::npos);
        CHECK(error.find(c.expected) != std::string::npos);
    }
}

TEST_CASE("load rejects a missing kernel.json") {
    temp_dir tmp;
    std::filesystem::create_directories(tmp.path() / "empty");
    CHECK_THROWS_WITH_AS(kernelspec::load(tmp.path() / "empty"),
                         doctest::Contains("cannot be opened"), std::runtime_error);
}

TEST_CASE("load rejects a directory name outside jupyter_client's kernel name alphabet") {
    const auto error = load_error(R"({"argv": ["k"], "display_name": "D"})", "my kernel");
    CHECK(error.find("invalid kernel name \"my kernel\"") != std::string::npos);
    CHECK(load_error(R"({"argv": ["k"], "display_name": "D"})", "Ok-1.2_x").empty());
}
