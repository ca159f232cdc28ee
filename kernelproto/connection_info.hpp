#pragma once
// The connection file a kernel is started with (jupyter_client's format).

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "kernelproto/channel.hpp"

namespace callisto::kernelproto {

struct connection_info {
    std::string transport = "tcp";  // "tcp" or "ipc"
    std::string ip = "127.0.0.1";   // for ipc: the socket path prefix
    std::uint16_t shell_port = 0;
    std::uint16_t iopub_port = 0;
    std::uint16_t stdin_port = 0;
    std::uint16_t control_port = 0;
    std::uint16_t hb_port = 0;
    std::string key;
    std::string signature_scheme = "hmac-sha256";
    std::string kernel_name;

    // tcp: "tcp://127.0.0.1:5555"; ipc: "ipc://<ip>-<port>" as jupyter_client names them.
    std::string endpoint(channel ch) const;
    std::string heartbeat_endpoint() const;

    nlohmann::json to_json() const;
    // Throws std::invalid_argument with a readable reason on a bad file.
    static connection_info from_json(const nlohmann::json& j);
};

}  // namespace callisto::kernelproto
