#pragma once
// What the gateway and a zygote say to each other over their socket pair: one JSON object per
// SOCK_SEQPACKET message. Beside a fork order go two descriptors: a memfd holding the kernel's
// environment (encode_environment), and the kernel's output pipe when it has one.
//
// The environment travels in a descriptor the zygote never reads, because whatever the zygote
// reads stays in its memory, and every later fork is a copy of that memory: a KERNEL_ variable
// one user gave their kernel must not be readable in another's. Only the fork reads it.
//
//   gateway -> zygote   {"op":"fork","id":7,"argv":[...],"cwd":"...","uid":..,
//                        "gid":..,"rlimits":[[res,soft,hard],..],"cgroup_procs":[..],
//                        "layout":{..}|null}
//                       {"op":"signal","pid":P,"signal":S}
//                       {"op":"terminate","pid":P,"grace_ms":G}   SIGTERM, SIGKILL after G
//   zygote -> gateway   {"event":"ready","python":"3.11.2","preloaded":[..],"failed":{..},
//                        "seconds":1.2,"prefaulted_pages":3890}
//                       {"event":"forked","id":7,"pid":P}
//                       {"event":"fork_failed","id":7,"error":"mount /usr: ..."}
//                       {"event":"exited","pid":P,"status":W}     W as from waitpid
//
// Decoders throw std::invalid_argument on anything malformed; neither side trusts the other's
// bytes to be well formed.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "launcher/process/spawn_description.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"

namespace callisto::launcher::zygote_protocol {

// A fork as the zygote reads it: spawn_description's identity, limits and environment with
// zygote_fork's command, cwd and layout.
struct fork_order {
    std::uint64_t id = 0;
    std::vector<std::string> argv;
    std::filesystem::path cwd;
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    std::vector<resource_limit> rlimits;
    std::vector<std::filesystem::path> cgroup_procs_files;
    std::optional<sandbox_layout> layout;
    bool outlive_gateway = false;  // no death signal tied to the zygote (spawn_description)
};

struct signal_order {
    pid_t pid = 0;
    int signal = 0;
};

struct terminate_order {
    pid_t pid = 0;
    std::uint64_t grace_ms = 0;
};

using order = std::variant<fork_order, signal_order, terminate_order>;

struct ready_event {
    std::string python;
    std::vector<std::string> preloaded;
    std::map<std::string, std::string> failed;  // module -> why it did not import
    double seconds = 0;
    std::uint64_t prefaulted_pages = 0;  // faulted in by each ipykernel fork first
};

struct forked_event {
    std::uint64_t id = 0;
    pid_t pid = 0;
};

struct fork_failed_event {
    std::uint64_t id = 0;
    std::string error;
};

struct exited_event {
    pid_t pid = 0;
    int status = 0;
};

using event = std::variant<ready_event, forked_event, fork_failed_event, exited_event>;

// The fork order for a spawn_description whose `zygote` is set (without its environment).
// Throws std::invalid_argument when it is not.
std::string encode_fork(std::uint64_t id, const spawn_description& what);
std::string encode(const signal_order& o);
std::string encode(const terminate_order& o);
order decode_order(const std::string& text);

// The kernel's environment, as the memfd beside a fork order holds it. decode_environment
// throws std::invalid_argument when it is not an object of strings.
std::string encode_environment(const std::map<std::string, std::string>& env);
std::map<std::string, std::string> decode_environment(const std::string& text);

std::string encode(const ready_event& e);
std::string encode(const forked_event& e);
std::string encode(const fork_failed_event& e);
std::string encode(const exited_event& e);
event decode_event(const std::string& text);

}  // namespace callisto::launcher::zygote_protocol
