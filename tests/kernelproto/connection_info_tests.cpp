#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include "test_support.hpp"

#include "kernelproto/connection_info.hpp"

using callisto::kernelproto::channel;
using callisto::kernelproto::connection_info;
using nlohmann::json;

namespace {

json jupyter_file() {
    // As jupyter_client's write_connection_file writes it.
    return json::parse(R"({
        "shell_port": 50001, "iopub_port": 50002, "stdin_port": 50003,
        "control_port": 50004, "hb_port": 50005, "ip": "127.0.0.1",
        "key": "a0436f6c-1916-498b-8eb9-e81ab9368e84", "transport": "tcp",
        "signature_scheme": "hmac-sha256", "kernel_name": "python3"
    })");
}

// An ipc connection at `path`, its ports numbered 1 to 5 (shell, iopub, stdin, control, hb).
connection_info ipc_connection(std::string path) {
    connection_info info;
    info.transport = "ipc";
    info.ip = std::move(path);
    info.shell_port = 1;
    info.iopub_port = 2;
    info.stdin_port = 3;
    info.control_port = 4;
    info.hb_port = 5;
    return info;
}

// The endpoints of shell, iopub, stdin, control and the heartbeat, in that order.
std::vector<std::string> endpoints(const connection_info& info) {
    return {info.endpoint(channel::shell), info.endpoint(channel::iopub),
            info.endpoint(channel::stdin_), info.endpoint(channel::control),
            info.heartbeat_endpoint()};
}

}  // namespace

TEST_CASE("connection_info reads a jupyter_client connection file") {
    const auto info = connection_info::from_json(jupyter_file());
    CHECK(info.transport == "tcp");
    CHECK(info.ip == "127.0.0.1");
    CHECK(info.shell_port == 50001);
    CHECK(info.iopub_port == 50002);
    CHECK(info.stdin_port == 50003);
    CHECK(info.control_port == 50004);
    CHECK(info.hb_port == 50005);
    CHECK(info.key == "a0436f6c-1916-498b-8eb9-e81ab9368e84");
    CHECK(info.signature_scheme == "hmac-sha256");
    CHECK(info.kernel_name == "python3");
}

TEST_CASE("connection_info to_json and from_json round trip") {
    auto info = ipc_connection("/run/callisto/k1/k");
    info.key = "secret";
    info.kernel_name = "python3";
    const json j = info.to_json();
    CHECK(j["transport"] == "ipc");
    CHECK(j["shell_port"] == 1);
    CHECK(j["signature_scheme"] == "hmac-sha256");
    const auto back = connection_info::from_json(j);
    CHECK(back.to_json() == j);
    CHECK(connection_info::from_json(jupyter_file()).to_json() == jupyter_file());
}

TEST_CASE("connection_info names tcp endpoints host:port") {
    const auto info = connection_info::from_json(jupyter_file());
    CHECK(endpoints(info) ==
          std::vector<std::string>{"tcp://127.0.0.1:50001", "tcp://127.0.0.1:50002",
                                   "tcp://127.0.0.1:50003", "tcp://127.0.0.1:50004",
                                   "tcp://127.0.0.1:50005"});
}

TEST_CASE("connection_info names ipc endpoints path-port as jupyter_client does") {
    const auto info = ipc_connection("/tmp/k");
    CHECK(endpoints(info) == std::vector<std::string>{"ipc:///tmp/k-1", "ipc:///tmp/k-2",
                                                      "ipc:///tmp/k-3", "ipc:///tmp/k-4",
                                                      "ipc:///tmp/k-5"});
}

TEST_CASE("connection_info defaults optional fields") {
    json j = jupyter_file();
    j.erase("transport");
    j.erase("signature_scheme");
    j.erase("kernel_name");
    const auto info = connection_info::from_json(j);
    CHECK(info.transport == "tcp");
    CHECK(info.signature_scheme == "hmac-sha256");
    CHECK(info.kernel_name.empty());
}

TEST_CASE("connection_info rejects missing and malformed fields") {
    for (const char* field :
         {"shell_port", "iopub_port", "stdin_port", "control_port", "hb_port", "ip", "key"}) {
        CAPTURE(field);
        json j = jupyter_file();
        j.erase(field);
        CHECK_THROWS_AS(connection_info::from_json(j), std::invalid_argument);
    }
    auto with = [](const char* field, json value) {
        json j = jupyter_file();
        j[field] = std::move(value);
        return j;
    };
    CHECK_THROWS_AS(connection_info::from_json(with("shell_port", "50001")), std::invalid_argument);
    CHECK_THROWS_AS(connection_info::from_json(with("shell_port", 70000)), std::invalid_argument);
    CHECK_THROWS_AS(connection_info::from_json(with("shell_port", -1)), std::invalid_argument);
    CHECK_THROWS_AS(connection_info::from_json(with("shell_port", 1.5)), std::invalid_argument);
    CHECK_THROWS_AS(connection_info::from_json(with("ip", 127)), std::invalid_argument);
    CHECK_THROWS_AS(connection_info::from_json(with("transport", "udp")), std::invalid_argument);
    CHECK_THROWS_AS(connection_info::from_json(with("signature_scheme", "hmac-md5")),
                    std::invalid_argument);
    CHECK_THROWS_AS(connection_info::from_json(json::array()), std::invalid_argument);
}

TEST_CASE("connection_info error messages name the field") {
    json j = jupyter_file();
    j.erase("hb_port");
    try {
        connection_info::from_json(j);
        FAIL("expected an exception");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()).find("hb_port") != std::string::npos);
    }
}
