#include "gateway/interpreter/execution_request.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "gateway/interpreter/json_body.hpp"

namespace callisto::gateway::interpreter {

namespace {

// Printable ASCII without spaces: keys end up in logs and URLs.
bool is_valid_key(const std::string& key, std::size_t max_bytes) {
    if (key.empty() || key.size() > max_bytes) return false;
    for (unsigned char c : key)
        if (c <= 0x20 || c >= 0x7f) return false;
    return true;
}

}  // namespace

std::string language_choices() { return languages::language_list('\''); }

std::optional<std::string> check_code(std::string_view code, std::string_view field) {
    if (code.find('\0') != std::string_view::npos)
        return std::string(field) + " contains a NUL character, which a kernel cannot run";
    return std::nullopt;
}

std::optional<execution_request> parse_execution_request(std::string_view body,
                                                         std::string_view accept,
                                                         const execution_request_limits& limits,
                                                         std::string& error) {
    auto doc = parse_json_body(body, error);
    if (!doc) return std::nullopt;
    return execution_request_from_json(*doc, accept, limits, error);
}

std::optional<execution_request> execution_request_from_json(
    const nlohmann::json& doc, std::string_view accept, const execution_request_limits& limits,
    std::string& error, std::initializer_list<std::string_view> also_allowed) {
    if (!doc.is_object()) {
        error = "the request must be a JSON object";
        return std::nullopt;
    }
    static const char* known[] = {"code",   "language", "timeout",   "idempotency_key",
                                  "stream", "env",      "keep_ansi", "output_budget"};
    for (auto& [name, value] : doc.items()) {
        bool ok = false;
        for (const char* k : known) ok = ok || name == k;
        for (auto k : also_allowed) ok = ok || name == k;
        if (!ok) {
            error = "unknown field '" + name + "'";
            return std::nullopt;
        }
    }
    execution_request req;
    if (!doc.contains("code") || !doc["code"].is_string()) {
        error = "'code' is required and must be a string";
        return std::nullopt;
    }
    req.code = doc["code"].get<std::string>();
    if (req.code.size() > limits.max_code_bytes) {
        error = "'code' is larger than " + std::to_string(limits.max_code_bytes) + " bytes";
        return std::nullopt;
    }
    if (auto why = check_code(req.code, "'code'")) {
        error = std::move(*why);
        return std::nullopt;
    }
    if (doc.contains("language") && !doc["language"].is_null()) {
        if (!doc["language"].is_string() || !(req.language = languages::parse_execution_language(
                                                  doc["language"].get<std::string>()))) {
            error = "'language' must be one of " + language_choices();
            return std::nullopt;
        }
    }
    if (doc.contains("timeout") && !doc["timeout"].is_null()) {
        const auto& t = doc["timeout"];
        if (!t.is_number() || t.is_boolean()) {
            error = "'timeout' must be a number of seconds";
            return std::nullopt;
        }
        const double seconds = t.get<double>();
        if (!std::isfinite(seconds) || seconds <= 0 ||
            seconds > static_cast<double>(limits.max_timeout.count())) {
            error = "'timeout' must be more than 0 and at most " +
                    std::to_string(limits.max_timeout.count()) + " seconds";
            return std::nullopt;
        }
        req.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
    } else if (limits.default_timeout.count() > 0) {
        // An execution that stops answering must not stay running for ever: an agent waiting
        // on it would wait as long.
        req.timeout = limits.default_timeout;
    }
    if (doc.contains("idempotency_key") && !doc["idempotency_key"].is_null()) {
        const auto& k = doc["idempotency_key"];
        if (!k.is_string() || !is_valid_key(k.get<std::string>(), limits.max_key_bytes)) {
            error = "'idempotency_key' must be 1 to " + std::to_string(limits.max_key_bytes) +
                    " printable ASCII characters without spaces";
            return std::nullopt;
        }
        req.idempotency_key = k.get<std::string>();
    }
    if (doc.contains("stream") && !doc["stream"].is_null()) {
        if (!doc["stream"].is_boolean()) {
            error = "'stream' must be true or false";
            return std::nullopt;
        }
        req.stream = doc["stream"].get<bool>();
    }
    if (doc.contains("keep_ansi") && !doc["keep_ansi"].is_null()) {
        if (!doc["keep_ansi"].is_boolean()) {
            error = "'keep_ansi' must be true or false";
            return std::nullopt;
        }
        req.keep_ansi = doc["keep_ansi"].get<bool>();
    }
    if (doc.contains("output_budget") && !doc["output_budget"].is_null()) {
        const auto& b = doc["output_budget"];
        if (!b.is_number_integer() || b.get<std::int64_t>() < 0 ||
            b.get<std::uint64_t>() < limits.min_output_budget ||
            b.get<std::uint64_t>() > limits.max_output_budget) {
            error = "'output_budget' must be a whole number of bytes from " +
                    std::to_string(limits.min_output_budget) + " to " +
                    std::to_string(limits.max_output_budget) + " (the server's --output-budget)";
            return std::nullopt;
        }
        req.output_budget = b.get<std::size_t>();
    }
    if (doc.contains("env") && !doc["env"].is_null()) {
        auto env = parse_env(doc["env"], limits.env, error);
        if (!env) return std::nullopt;
        req.env = std::move(*env);
    }
    if (accept.find("application/x-ndjson") != std::string_view::npos) req.stream = true;
    return req;
}

}  // namespace callisto::gateway::interpreter
