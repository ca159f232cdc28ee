#pragma once
// An E2B sandbox as the gateway keeps it (who owns it, its template, metadata, access tokens,
// contexts and end), and as it writes it down (--state-dir) so that a sandbox outlives a
// gateway restart as its kernels do: the next gateway, having adopted the kernels and
// restored their contexts, takes the sandbox back under the same id and tokens.

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_record_store.hpp"
#include "common/logger.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::e2b {

// An E2B code context: an interpreter context of the sandbox.
struct sandbox_context {
    std::string id;
    std::string language;
    std::string cwd;
};

struct sandbox_record {
    std::string id;
    std::string template_id;  // as the client named it
    std::string kernel;       // the kernelspec it runs
    user owner;               // as the users file said at its creation
    std::map<std::string, std::string> metadata;
    std::string envd_token;     // X-Access-Token on the data plane
    std::string traffic_token;  // E2B-Traffic-Access-Token (the SDK sends it on /contexts)
    std::chrono::system_clock::time_point started_at;
    std::chrono::system_clock::time_point end_at;
    std::vector<std::pair<std::string, std::string>> env;  // envVars on create, sorted
    std::string default_context;            // the interpreter context code runs in by default
    std::vector<sandbox_context> contexts;  // every context of the sandbox, the default first
    // What each of its contexts' kernels may reach (network.allowOut, canonical rules): the
    // one made on create and every one made on the data plane after.
    std::vector<std::string> network_allow;

    nlohmann::json to_json() const;
    // Throws std::invalid_argument saying what is missing or malformed.
    static sandbox_record from_json(const nlohmann::json& j);
};

// <state-dir>/e2b-sandboxes: one record per sandbox, rewritten as its timeout and contexts
// change (atomically, without fsync, as the context records: they outlive a gateway crash,
// not a machine's, which takes the kernels anyway). It holds the sandboxes' tokens: the
// directory is the gateway's alone (0700), as the kernel records with their keys are.
class sandbox_record_store : public json_record_store<sandbox_record> {
public:
    sandbox_record_store(std::filesystem::path dir, logger log)
        : json_record_store(std::move(dir), "E2B sandbox", record_directory::sync::never,
                            std::move(log)) {}
};

}  // namespace callisto::gateway::e2b
