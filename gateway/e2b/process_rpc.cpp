#include "gateway/e2b/process_rpc.hpp"

#include <charconv>

#include "common/encoding.hpp"
#include "gateway/e2b/connect_envelope.hpp"
#include "gateway/e2b/envd_files.hpp"

namespace callisto::gateway::e2b {

namespace {

using nlohmann::json;

std::string frame(const json& message) {
    return encode_envelope(0, message.dump(-1, ' ', false, json::error_handler_t::replace));
}

bool is_string_array(const json& v) {
    if (!v.is_array()) return false;
    for (const auto& x : v)
        if (!x.is_string()) return false;
    return true;
}

}  // namespace

std::string shell_quote(std::string_view word) {
    std::string out = "'";
    for (char c : word) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += '\'';
    return out;
}

std::optional<process_start> parse_process_start(std::string_view message,
                                                 const interpreter::env_limits& limits,
                                                 connect_code& code, std::string& error) {
    auto refuse = [&](connect_code c, std::string why) -> std::optional<process_start> {
        code = c;
        error = std::move(why);
        return std::nullopt;
    };
    const json msg = json::parse(message, nullptr, false);
    if (msg.is_discarded() || !msg.is_object())
        return refuse(connect_code::invalid_argument, "the request must be a JSON object");
    if (auto pty = msg.find("pty"); pty != msg.end() && !pty->is_null())
        return refuse(connect_code::unimplemented, "a pty is not served by this gateway");
    if (auto in = msg.find("stdin"); in != msg.end() && !in->is_null()) {
        if (!in->is_boolean())
            return refuse(connect_code::invalid_argument, "'stdin' must be a boolean");
        if (in->get<bool>())
            return refuse(connect_code::unimplemented,
                          "stdin is not served by this gateway: run with stdin false");
    }
    if (auto tag = msg.find("tag"); tag != msg.end() && !tag->is_null() && !tag->is_string())
        return refuse(connect_code::invalid_argument, "'tag' must be a string");
    const auto process = msg.find("process");
    if (process == msg.end() || !process->is_object())
        return refuse(connect_code::invalid_argument, "'process' is required, an object");
    const auto cmd = process->find("cmd");
    if (cmd == process->end() || !cmd->is_string() || cmd->get_ref<const std::string&>().empty())
        return refuse(connect_code::invalid_argument, "'process.cmd' is required, a string");
    json args = json::array();
    if (auto a = process->find("args"); a != process->end() && !a->is_null()) {
        if (!is_string_array(*a))
            return refuse(connect_code::invalid_argument,
                          "'process.args' must be an array of strings");
        args = *a;
    }
    process_start out;
    if (auto envs = process->find("envs"); envs != process->end() && !envs->is_null()) {
        std::string why;
        auto env = interpreter::parse_env(*envs, limits, why);
        if (!env) return refuse(connect_code::invalid_argument, "'process.envs': " + why);
        out.env = std::move(*env);
    }
    std::string prefix;
    if (auto cwd = process->find("cwd"); cwd != process->end() && !cwd->is_null()) {
        if (!cwd->is_string())
            return refuse(connect_code::invalid_argument, "'process.cwd' must be a string");
        envd_error e;
        auto where = resolve_envd_path(cwd->get_ref<const std::string&>(), e);
        if (!where) return refuse(e.code, "'process.cwd': " + e.message);
        // Relative to the kernel's working directory, the sandbox's home.
        if (!where->empty()) prefix = "cd " + shell_quote(*where) + " || exit 1\n";
    }
    const auto& c = cmd->get_ref<const std::string&>();
    const bool bash = c == "/bin/bash" || c == "bash" || c == "/usr/bin/bash";
    if (bash && args.size() == 3 && args[0] == "-l" && args[1] == "-c")
        out.script = prefix + args[2].get<std::string>();
    else if (bash && args.size() == 2 && args[0] == "-c")
        out.script = prefix + args[1].get<std::string>();
    else {
        std::string line = "exec " + shell_quote(c);
        for (const auto& a : args) line += " " + shell_quote(a.get_ref<const std::string&>());
        out.script = prefix + line;
    }
    if (out.script.find('\0') != std::string::npos)
        return refuse(connect_code::invalid_argument, "the command contains a NUL byte");
    return out;
}

std::string start_frame(std::uint32_t pid) {
    return frame({{"event", {{"start", {{"pid", pid}}}}}});
}

std::string keepalive_frame() { return frame({{"event", {{"keepalive", json::object()}}}}); }

process_exit exit_of(const json& execution) {
    process_exit out;
    const std::string status = execution.value("status", "");
    if (status == "ok") {
        out.code = 0;
        out.status = "exit status 0";
        return out;
    }
    const json error = execution.value("error", json::object());
    const std::string name = error.is_object() ? error.value("name", "") : "";
    const std::string value = error.is_object() ? error.value("value", "") : "";
    // shell_runner.py: "the script exited with status N", "the script was killed by SIGKILL"
    constexpr std::string_view exited = "the script exited with status ";
    if (name == "ShellError" && value.rfind(exited, 0) == 0) {
        int n = -1;
        const auto digits = std::string_view(value).substr(exited.size());
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        if (ec == std::errc{} && end == digits.data() + digits.size()) {
            out.code = n;
            out.status = "exit status " + std::to_string(n);
            return out;
        }
    }
    constexpr std::string_view killed = "the script was killed by SIG";
    if (name == "ShellError" && value.rfind(killed, 0) == 0) {
        std::string sig = value.substr(killed.size());
        for (auto& ch : sig) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        out.status = "signal: " + sig;
        return out;
    }
    if (status == "timeout") {
        out.status = "signal: killed";
        out.error = "the command ran past its deadline";
    } else if (status == "interrupted") {
        out.status = "signal: interrupt";
        out.error = "the command was interrupted";
    } else {
        out.status = "error";
        out.error = name.empty() ? "the command did not run to its end" : name + ": " + value;
    }
    return out;
}

std::string stream_error_body(connect_code code, std::string_view message) {
    const json end = {{"error", {{"code", std::string(to_string(code))}, {"message", message}}}};
    return encode_envelope(end_flag, end.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::vector<std::string> process_frames(const json& event) {
    if (!event.is_object()) return {};
    const std::string type = event.value("type", "");
    if (type == "stdout" || type == "stderr") {
        const std::string text = event.value("text", "");
        if (text.empty()) return {};
        return {frame({{"event", {{"data", {{type, encode_base64(text)}}}}}})};
    }
    if (type != "end") return {};
    const auto exit = exit_of(event.value("execution", json::object()));
    json end = {{"exitCode", exit.code}, {"exited", exit.code >= 0}, {"status", exit.status}};
    if (exit.error) end["error"] = *exit.error;
    return {frame({{"event", {{"end", end}}}}), encode_envelope(end_flag, "{}")};
}

}  // namespace callisto::gateway::e2b
