#include "gateway/e2b/process_rpc.hpp"

#include <charconv>
#include <cstring>

#include "common/encoding.hpp"
#include "gateway/e2b/connect_envelope.hpp"
#include "gateway/e2b/envd_files.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"

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

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

struct refusal {
    connect_code& code;
    std::string& error;
    template <typename T>
    std::optional<T> operator()(connect_code c, std::string why) const {
        code = c;
        error = std::move(why);
        return std::nullopt;
    }
};

std::optional<json> parse_object(std::string_view message, const refusal& refuse) {
    json msg = json::parse(message, nullptr, false);
    if (msg.is_discarded() || !msg.is_object())
        return refuse.operator()<json>(connect_code::invalid_argument,
                                       "the request must be a JSON object");
    return msg;
}

std::optional<process_selector> selector_of(const json& msg, const refusal& refuse) {
    const auto process = msg.find("process");
    if (process == msg.end() || !process->is_object())
        return refuse.operator()<process_selector>(connect_code::invalid_argument,
                                                   "'process' is required: {pid} or {tag}");
    process_selector out;
    const auto pid = process->find("pid");
    const auto tag = process->find("tag");
    if (pid != process->end() && tag != process->end())
        return refuse.operator()<process_selector>(connect_code::invalid_argument,
                                                   "'process' names a pid or a tag, not both");
    if (pid != process->end()) {
        // proto3 JSON: a uint32 as a number or a string of digits.
        std::uint64_t n = 0;
        bool ok = false;
        if (pid->is_number_unsigned()) {
            n = pid->get<std::uint64_t>();
            ok = true;
        } else if (pid->is_string()) {
            const auto& s = pid->get_ref<const std::string&>();
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
            ok = !s.empty() && ec == std::errc{} && end == s.data() + s.size();
        }
        if (!ok || n == 0 || n > UINT32_MAX)
            return refuse.operator()<process_selector>(connect_code::invalid_argument,
                                                       "'process.pid' must be a positive pid");
        out.pid = static_cast<std::uint32_t>(n);
    } else if (tag != process->end()) {
        if (!tag->is_string() || tag->get_ref<const std::string&>().empty())
            return refuse.operator()<process_selector>(connect_code::invalid_argument,
                                                       "'process.tag' must be a string");
        out.tag = tag->get<std::string>();
    } else {
        return refuse.operator()<process_selector>(connect_code::invalid_argument,
                                                   "'process' names no pid and no tag");
    }
    return out;
}

// A request about one process (Connect, CloseStdin, SendSignal, SendInput): its message, an
// object, and the process it names.
struct process_request {
    json msg;
    process_selector selector;
};

std::optional<process_request> parse_process_request(std::string_view message,
                                                     const refusal& refuse) {
    auto msg = parse_object(message, refuse);
    if (!msg) return std::nullopt;
    auto selector = selector_of(*msg, refuse);
    if (!selector) return std::nullopt;
    return process_request{std::move(*msg), std::move(*selector)};
}

}  // namespace

std::optional<process_start> parse_process_start(std::string_view message,
                                                 const interpreter::env_limits& limits,
                                                 connect_code& code, std::string& error) {
    const refusal refuse{code, error};
    auto no = [&](connect_code c, std::string why) {
        return refuse.operator()<process_start>(c, std::move(why));
    };
    auto msg = parse_object(message, refuse);
    if (!msg) return std::nullopt;
    if (auto pty = msg->find("pty"); pty != msg->end() && !pty->is_null())
        return no(connect_code::unimplemented, "a pty is not served by this gateway");
    process_start out;
    if (auto in = msg->find("stdin"); in != msg->end() && !in->is_null()) {
        if (!in->is_boolean())
            return no(connect_code::invalid_argument, "'stdin' must be a boolean");
        out.stdin_open = in->get<bool>();
    }
    if (auto tag = msg->find("tag"); tag != msg->end() && !tag->is_null()) {
        if (!tag->is_string()) return no(connect_code::invalid_argument, "'tag' must be a string");
        out.tag = tag->get<std::string>();
    }
    const auto process = msg->find("process");
    if (process == msg->end() || !process->is_object())
        return no(connect_code::invalid_argument, "'process' is required, an object");
    const auto cmd = process->find("cmd");
    if (cmd == process->end() || !cmd->is_string() || cmd->get_ref<const std::string&>().empty())
        return no(connect_code::invalid_argument, "'process.cmd' is required, a string");
    out.cmd = cmd->get<std::string>();
    if (auto a = process->find("args"); a != process->end() && !a->is_null()) {
        if (!is_string_array(*a))
            return no(connect_code::invalid_argument, "'process.args' must be an array of strings");
        out.args = a->get<std::vector<std::string>>();
    }
    if (auto envs = process->find("envs"); envs != process->end() && !envs->is_null()) {
        std::string why;
        auto env = interpreter::parse_env(*envs, limits, why);
        if (!env) return no(connect_code::invalid_argument, "'process.envs': " + why);
        out.env = std::move(*env);
    }
    out.cwd = launcher::sandbox_home;
    if (auto cwd = process->find("cwd"); cwd != process->end() && !cwd->is_null()) {
        if (!cwd->is_string())
            return no(connect_code::invalid_argument, "'process.cwd' must be a string");
        out.cwd_asked = cwd->get<std::string>();
        envd_error e;
        auto where = resolve_envd_path(out.cwd_asked, e);
        if (!where) return no(e.code, "'process.cwd': " + e.message);
        out.cwd = envd_path_of(*where);  // /home/user is the tree, as E2B and bash name it
    }
    // execve's strings end at a NUL: refused rather than cut short.
    bool nul = has_nul(out.cmd);
    for (const auto& a : out.args) nul = nul || has_nul(a);
    if (nul) return no(connect_code::invalid_argument, "the command contains a NUL byte");
    return out;
}

std::optional<process_selector> parse_selector_request(std::string_view message, connect_code& code,
                                                       std::string& error) {
    auto request = parse_process_request(message, refusal{code, error});
    if (!request) return std::nullopt;
    return std::move(request->selector);
}

std::optional<signal_request> parse_send_signal(std::string_view message, connect_code& code,
                                                std::string& error) {
    const refusal refuse{code, error};
    auto request = parse_process_request(message, refuse);
    if (!request) return std::nullopt;
    signal_request out{std::move(request->selector), 0};
    const auto sig = request->msg.find("signal");
    if (sig != request->msg.end()) {
        if (*sig == "SIGNAL_SIGKILL" || *sig == 9) out.signal = 9;
        if (*sig == "SIGNAL_SIGTERM" || *sig == 15) out.signal = 15;
    }
    if (out.signal == 0)
        return refuse.operator()<signal_request>(
            connect_code::invalid_argument, "'signal' must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
    return out;
}

std::optional<input_request> parse_send_input(std::string_view message, connect_code& code,
                                              std::string& error) {
    const refusal refuse{code, error};
    auto request = parse_process_request(message, refuse);
    if (!request) return std::nullopt;
    const auto input = request->msg.find("input");
    if (input == request->msg.end() || !input->is_object())
        return refuse.operator()<input_request>(connect_code::invalid_argument,
                                                "'input' is required: {stdin}");
    if (input->contains("pty"))
        return refuse.operator()<input_request>(connect_code::unimplemented,
                                                "a pty is not served by this gateway");
    const auto in = input->find("stdin");
    if (in == input->end() || !in->is_string())
        return refuse.operator()<input_request>(connect_code::invalid_argument,
                                                "'input.stdin' must be base64 bytes");
    auto bytes = decode_base64(in->get_ref<const std::string&>());
    if (!bytes)
        return refuse.operator()<input_request>(connect_code::invalid_argument,
                                                "'input.stdin' is not valid base64");
    return input_request{std::move(request->selector), std::move(*bytes)};
}

process_exit exit_of_report(std::string_view line) {
    process_exit out;
    auto number = [&](std::string_view prefix) -> std::optional<int> {
        if (!line.starts_with(prefix)) return std::nullopt;
        const auto digits = line.substr(prefix.size());
        int n = -1;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        if (ec != std::errc{} || end != digits.data() + digits.size() || n < 0) return std::nullopt;
        return n;
    };
    if (auto code = number("exit ")) {
        out.code = *code;
        out.exited = true;
        out.status = "exit status " + std::to_string(*code);
        // Go's exec.ExitError, which envd sends: the SDK's CommandExitError says it.
        if (*code != 0) out.error = out.status;
        return out;
    }
    if (auto sig = number("signal ")) {
        // Go's os.ProcessState text, as envd sends it: "signal: killed".
        const char* name = *sig < 65 ? ::strsignal(*sig) : nullptr;
        std::string text = name ? name : "signal " + std::to_string(*sig);
        for (auto& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        out.status = "signal: " + text;
        out.error = out.status;
        return out;
    }
    out.status = "error";
    out.error = "the command did not run to its end";
    return out;
}

std::string start_frame(std::uint32_t pid) {
    return frame({{"event", {{"start", {{"pid", pid}}}}}});
}

std::string keepalive_frame() { return frame({{"event", {{"keepalive", json::object()}}}}); }

std::string data_frame(std::string_view stream, std::string_view bytes) {
    return frame({{"event", {{"data", {{std::string(stream), encode_base64(bytes)}}}}}});
}

std::vector<std::string> end_frames(const process_exit& exit) {
    json end = {{"exitCode", exit.code}, {"exited", exit.exited}, {"status", exit.status}};
    if (exit.error) end["error"] = *exit.error;
    return {frame({{"event", {{"end", end}}}}), encode_envelope(end_flag, "{}")};
}

std::string stream_error_body(connect_code code, std::string_view message) {
    const json end = {{"error", {{"code", std::string(to_string(code))}, {"message", message}}}};
    return encode_envelope(end_flag, end.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace callisto::gateway::e2b
