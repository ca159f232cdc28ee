#include "launcher/kernelspec/kernelspec.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace callisto::launcher {

namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& problem) {
    throw std::runtime_error("kernelspec " + file.string() + ": " + problem);
}

// jupyter_client's rule; the name ends up in URLs (/api/kernelspecs/{name}), so we enforce it.
bool valid_kernel_name(const std::string& name) {
    if (name.empty()) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    });
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

nlohmann::json kernelspec::spec_json() const {
    nlohmann::json env_json = nlohmann::json::object();
    for (const auto& [key, value] : env) env_json[key] = value;
    return {
        {"argv", argv},
        {"env", std::move(env_json)},
        {"display_name", display_name},
        {"language", language},
        {"interrupt_mode", interrupt == interrupt_mode::message ? "message" : "signal"},
        {"metadata", metadata},
    };
}

kernelspec kernelspec::load(const std::filesystem::path& dir) {
    const auto file = dir / "kernel.json";

    kernelspec spec;
    spec.resource_dir = dir;
    spec.name = lower(dir.filename().string());
    if (spec.name.empty()) spec.name = lower(dir.parent_path().filename().string());  // "dir/"
    if (!valid_kernel_name(spec.name))
        fail(file, "invalid kernel name \"" + spec.name + "\" (allowed: a-z 0-9 . _ -)");

    std::ifstream in(file, std::ios::binary);
    if (!in) fail(file, "cannot be opened");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) fail(file, "cannot be read");

    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
        fail(file, std::string("is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) fail(file, "top level must be a JSON object");

    auto argv_it = j.find("argv");
    if (argv_it == j.end()) fail(file, "\"argv\" is missing");
    if (!argv_it->is_array() || argv_it->empty())
        fail(file, "\"argv\" must be a non-empty array of strings");
    for (const auto& arg : *argv_it) {
        if (!arg.is_string()) fail(file, "\"argv\" must be a non-empty array of strings");
        spec.argv.push_back(arg.get<std::string>());
    }
    if (spec.argv.front().empty()) fail(file, "\"argv\"[0] must not be empty");

    auto name_it = j.find("display_name");
    if (name_it == j.end()) fail(file, "\"display_name\" is missing");
    if (!name_it->is_string()) fail(file, "\"display_name\" must be a string");
    spec.display_name = name_it->get<std::string>();

    if (auto it = j.find("language"); it != j.end() && !it->is_null()) {
        if (!it->is_string()) fail(file, "\"language\" must be a string");
        spec.language = it->get<std::string>();
    }

    if (auto it = j.find("interrupt_mode"); it != j.end() && !it->is_null()) {
        if (!it->is_string()) fail(file, "\"interrupt_mode\" must be \"signal\" or \"message\"");
        const auto mode = it->get<std::string>();
        if (mode == "signal")
            spec.interrupt = interrupt_mode::signal;
        else if (mode == "message")
            spec.interrupt = interrupt_mode::message;
        else
            fail(file,
                 "\"interrupt_mode\" must be \"signal\" or \"message\", not \"" + mode + "\"");
    }

    if (auto it = j.find("env"); it != j.end() && !it->is_null()) {
        if (!it->is_object()) fail(file, "\"env\" must be an object of strings");
        for (const auto& [key, value] : it->items()) {
            if (!value.is_string()) fail(file, "\"env\" value of \"" + key + "\" must be a string");
            spec.env[key] = value.get<std::string>();
        }
    }

    if (auto it = j.find("metadata"); it != j.end() && !it->is_null()) {
        if (!it->is_object()) fail(file, "\"metadata\" must be an object");
        spec.metadata = *it;
    }

    return spec;
}

}  // namespace callisto::launcher
