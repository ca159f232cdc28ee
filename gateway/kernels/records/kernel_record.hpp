#pragma once
// What a gateway writes down about each running kernel so the next gateway process can adopt
// it (--state-dir): who owns it, which kernelspec, how to reach it (connection info with its
// key), which process it is (pid and start time, so a reused pid is never mistaken for it),
// and, when sandboxed, its uid, cgroup and workdir.

#include <sys/types.h>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelproto/connection_info.hpp"

namespace callisto::gateway::kernels {

struct kernel_record {
    std::string id;
    std::string kernelspec;
    std::string owner;
    std::map<std::string, std::string> env;  // the client's KERNEL_* variables (for restarts)
    pid_t pid = 0;
    std::uint64_t start_ticks = 0;  // launcher::process_start_ticks(pid) when recorded
    bool forked = false;            // by a zygote
    std::filesystem::path runtime_dir;
    kernelproto::connection_info connection;
    // The gateway's Jupyter session id for this kernel, which is also its ZeroMQ routing
    // identity: kept, so that the kernel's replies to requests sent before a restart reach the
    // gateway that adopts it. "" in records older than this field (a new one is made).
    std::string session;
    // What it may reach through the egress proxy (issue 36), its rules in canonical form: the
    // adopting gateway opens its listener and proxy again with them. Empty: no network (and
    // absent in records older than this field, whose kernels had none, or no listener after
    // adoption either way).
    std::vector<std::string> egress_allow;
    // Sandboxed kernels only.
    std::optional<uid_t> uid;
    std::string cgroup;  // the cgroup's name ("" without cgroups)
    std::filesystem::path workdir;

    // The kernel whose sandbox this one ran in (kernel_process::share_sandbox: an E2B
    // sandbox's second context), named by the workdir it shares; "" when it had its own.
    std::string sandbox_owner() const;

    nlohmann::json to_json() const;
    // Throws std::invalid_argument saying what is missing or malformed.
    static kernel_record from_json(const nlohmann::json& j);
};

}  // namespace callisto::gateway::kernels
