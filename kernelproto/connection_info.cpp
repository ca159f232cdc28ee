#include "kernelproto/connection_info.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace callisto::kernelproto {

namespace {

std::string make_endpoint(const connection_info& info, std::uint16_t port) {
    // jupyter_client: tcp "tcp://<ip>:<port>", ipc "ipc://<ip>-<port>" (ip is a path prefix).
    if (info.transport == "ipc") return "ipc://" + info.ip + "-" + std::to_string(port);
    return info.transport + "://" + info.ip + ":" + std::to_string(port);
}

const nlohmann::json& required(const nlohmann::json& j, const char* name) {
    const auto it = j.find(name);
    if (it == j.end())
        throw std::invalid_argument(std::string("connection file: missing \"") + name + "\"");
    return *it;
}

std::string string_field(const nlohmann::json& j, const char* name,
                         const std::string* fallback = nullptr) {
    if (fallback != nullptr && !j.contains(name)) return *fallback;
    const auto& v = required(j, name);
    if (!v.is_string())
        throw std::invalid_argument(std::string("connection file: \"") + name +
                                    "\" must be a string");
    return v.get<std::string>();
}

std::uint16_t port_field(const nlohmann::json& j, const char* name) {
    const auto& v = required(j, name);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 65535)
        throw std::invalid_argument(std::string("connection file: \"") + name +
                                    "\" must be an integer port 0..65535");
    return static_cast<std::uint16_t>(v.get<std::int64_t>());
}

}  // namespace

std::string connection_info::endpoint(channel ch) const {
    switch (ch) {
        case channel::shell: return make_endpoint(*this, shell_port);
        case channel::control: return make_endpoint(*this, control_port);
        case channel::stdin_: return make_endpoint(*this, stdin_port);
        case channel::iopub: return make_endpoint(*this, iopub_port);
    }
    return make_endpoint(*this, shell_port);
}

std::string connection_info::heartbeat_endpoint() const { return make_endpoint(*this, hb_port); }

nlohmann::json connection_info::to_json() const {
    return {
        {"transport", transport},
        {"ip", ip},
        {"shell_port", shell_port},
        {"iopub_port", iopub_port},
        {"stdin_port", stdin_port},
        {"control_port", control_port},
        {"hb_port", hb_port},
        {"key", key},
        {"signature_scheme", signature_scheme},
        {"kernel_name", kernel_name},
    };
}

connection_info connection_info::from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw std::invalid_argument("connection file: not a JSON object");
    connection_info info;
    const std::string default_transport = "tcp";
    const std::string default_scheme = "hmac-sha256";
    const std::string no_name;
    info.transport = string_field(j, "transport", &default_transport);
    if (info.transport != "tcp" && info.transport != "ipc")
        throw std::invalid_argument(
            "connection file: transport must be \"tcp\" or \"ipc\", not \"" + info.transport +
            "\"");
    info.ip = string_field(j, "ip");
    info.shell_port = port_field(j, "shell_port");
    info.iopub_port = port_field(j, "iopub_port");
    info.stdin_port = port_field(j, "stdin_port");
    info.control_port = port_field(j, "control_port");
    info.hb_port = port_field(j, "hb_port");
    info.key = string_field(j, "key");
    info.signature_scheme = string_field(j, "signature_scheme", &default_scheme);
    // Only HMAC-SHA256 is implemented; accepting another scheme would fail every signature later.
    if (info.signature_scheme != "hmac-sha256")
        throw std::invalid_argument("connection file: unsupported signature_scheme \"" +
                                    info.signature_scheme + "\"");
    info.kernel_name = string_field(j, "kernel_name", &no_name);
    return info;
}

}  // namespace callisto::kernelproto
