#include "gateway/e2b/sandbox_templates.hpp"

#include <algorithm>
#include <charconv>

namespace callisto::gateway::e2b {

namespace {

// A template's or a kernelspec's name: what Jupyter allows in a kernelspec's (letters,
// digits, '.', '_', '-'), so any kernelspec can be named as a template too.
bool is_name(std::string_view s) {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

bool parse_count(std::string_view text, std::uint64_t min, std::uint64_t max, std::uint64_t& out) {
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max)
        return false;
    out = value;
    return true;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> out;
    for (std::size_t start = 0;;) {
        const auto at = text.find(sep, start);
        out.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
        if (at == std::string_view::npos) return out;
        start = at + 1;
    }
}

}  // namespace

std::optional<sandbox_template> parse_sandbox_template(std::string_view text, std::string& error) {
    const auto fail = [&](std::string why) -> std::optional<sandbox_template> {
        error = "NAME:KERNELSPEC[:pool=N][:timeout=SECS] (" + why + ")";
        return std::nullopt;
    };
    const auto parts = split(text, ':');
    if (parts.size() < 2) return fail("a template's name and its kernelspec");
    sandbox_template t;
    if (!is_name(parts[0]))
        return fail("a name of 1-64 letters, digits, '.', '_' or '-', not '" +
                    std::string(parts[0]) + "'");
    if (!is_name(parts[1])) return fail("a kernelspec's name, not '" + std::string(parts[1]) + "'");
    t.name = parts[0];
    t.kernelspec = parts[1];
    bool pool_given = false;
    for (std::size_t i = 2; i < parts.size(); ++i) {
        const auto eq = parts[i].find('=');
        const std::string key(parts[i].substr(0, eq));
        const std::string_view value =
            eq == std::string_view::npos ? std::string_view{} : parts[i].substr(eq + 1);
        std::uint64_t n = 0;
        if (key == "pool") {
            if (pool_given) return fail("pool given twice");
            if (!parse_count(value, 0, max_template_pool, n))
                return fail("pool=N with N 0-" + std::to_string(max_template_pool));
            pool_given = true;
            t.pool = n;
        } else if (key == "timeout") {
            if (t.timeout) return fail("timeout given twice");
            if (!parse_count(value, 1, max_template_timeout.count(), n))
                return fail("timeout=SECS with SECS 1-" +
                            std::to_string(max_template_timeout.count()));
            t.timeout = std::chrono::seconds(n);
        } else {
            return fail("'" + std::string(parts[i]) + "' is neither pool=N nor timeout=SECS");
        }
    }
    return t;
}

std::string format_sandbox_template(const sandbox_template& t) {
    std::string out = t.name + ":" + t.kernelspec;
    if (t.pool) out += ":pool=" + std::to_string(t.pool);
    if (t.timeout) out += ":timeout=" + std::to_string(t.timeout->count());
    return out;
}

sandbox_templates::sandbox_templates(std::vector<sandbox_template> declared,
                                     std::vector<std::string> kernelspecs,
                                     std::vector<std::string> sdk_defaults)
    : declared_(std::move(declared)),
      kernelspecs_(std::move(kernelspecs)),
      sdk_defaults_(std::move(sdk_defaults)) {}

std::optional<template_choice> sandbox_templates::resolve(const std::string& template_id,
                                                          const std::string& default_kernel,
                                                          std::string& why) const {
    const std::string name =
        template_id.empty() && !sdk_defaults_.empty() ? sdk_defaults_.front() : template_id;
    for (const auto& t : declared_)
        if (t.name == name) return template_choice{name, t.kernelspec, t.timeout};
    if (std::find(kernelspecs_.begin(), kernelspecs_.end(), name) != kernelspecs_.end())
        return template_choice{name, name, std::nullopt};
    if (std::find(sdk_defaults_.begin(), sdk_defaults_.end(), name) != sdk_defaults_.end())
        return template_choice{name, default_kernel, std::nullopt};
    std::string offered;
    for (const auto& t : declared_) offered += (offered.empty() ? "" : ", ") + t.name;
    std::string defaults;
    for (std::size_t i = 0; i < sdk_defaults_.size(); ++i)
        defaults += (i == 0                          ? ""
                     : i + 1 == sdk_defaults_.size() ? " or "
                                                     : ", ") +
                    sdk_defaults_[i];
    why = "template '" + name + "' not found: a template here is one the server declares (" +
          (offered.empty() ? std::string("none") : offered) +
          "), a kernelspec's name (GET /api/kernelspecs), or " + defaults + " for the default one";
    return std::nullopt;
}

}  // namespace callisto::gateway::e2b
