// callisto: the Jupyter-compatible kernel gateway. See README.md.

#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gateway/audit/audit_log.hpp"
#include "gateway/host_defaults.hpp"
#include "gateway/server.hpp"

extern char** environ;

namespace {

// Every connection and every kernel costs descriptors: take all the hard limit allows (the
// soft default of 1024, or 512 on some hosts, is reached by a few hundred idle sockets), and
// keep the connection cap to half of it, so kernels, files and the reserve descriptor the
// listener refuses with always have room. Returns a line for the log, or "".
std::string fit_open_files(callisto::gateway::server_config& cfg) {
    rlimit nofile{};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) != 0) return "";
    std::string said;
    if (nofile.rlim_cur < nofile.rlim_max) {
        const rlim_t before = nofile.rlim_cur;
        nofile.rlim_cur = nofile.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &nofile) == 0)
            said = "open files limit raised from " + std::to_string(before) + " to " +
                   std::to_string(nofile.rlim_max);
        else
            ::getrlimit(RLIMIT_NOFILE, &nofile);
    }
    const auto room = static_cast<std::size_t>(nofile.rlim_cur / 2);
    if (nofile.rlim_cur != RLIM_INFINITY &&
        (cfg.max_connections == 0 || cfg.max_connections > room)) {
        cfg.max_connections = room;
        said += std::string(said.empty() ? "" : "; ") + "--max-connections lowered to " +
                std::to_string(room) + ", half the open files limit (" +
                std::to_string(nofile.rlim_cur) + ")";
    }
    return said;
}

// `callisto audit-verify --key KEY [--anchor ANCHOR] FILE...`: 0 when every line of the chain
// through the files (oldest first) is authentic and in order, from seq 1 to the anchor; 3 when
// what is there is, but not all of it is there (rotated away, no anchor), each gap said; 1
// naming each broken line; 2 for a wrong command line. An argument that starts with '-' is an
// option, never a file: audit files are named FILE, FILE.1, ... (./-x reaches one that is).
int audit_verify(const std::vector<std::string>& args) {
    namespace audit = callisto::gateway::audit;
    static constexpr const char* usage =
        "usage: callisto audit-verify --key KEY [--anchor ANCHOR] FILE...\n"
        "  FILE...  the log and its rotated files, oldest first: FILE.2 FILE.1 FILE\n"
        "  KEY      the chain's key (--audit-key; default <state-dir>/audit.key)\n"
        "  ANCHOR   the last line the gateway wrote (default: KEY's NAME.anchor, if there)\n"
        "exit 0: proven from seq 1 to the anchor; 3: authentic but not complete (what is not\n"
        "proven is said); 1: broken (each problem named); 2: this message\n";
    std::string key_file, anchor_file;
    std::vector<std::string> files;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& into) {
            if (a.find('=') != std::string::npos) {
                into = a.substr(a.find('=') + 1);
                return true;
            }
            if (i + 1 >= args.size()) return false;
            into = args[++i];
            return true;
        };
        if (a == "--key" || a.starts_with("--key=")) {
            if (!value(key_file) || key_file.empty()) break;
        } else if (a == "--anchor" || a.starts_with("--anchor=")) {
            if (!value(anchor_file) || anchor_file.empty()) break;
        } else if (a == "-h" || a == "--help") {
            std::fputs(usage, stdout);
            return 0;
        } else if (a.starts_with("-")) {
            std::fprintf(stderr, "audit-verify: unknown option %s\n", a.c_str());
            std::fputs(usage, stderr);
            return 2;
        } else {
            files.push_back(a);
        }
    }
    if (key_file.empty() || files.empty()) {
        std::fputs(key_file.empty() ? "audit-verify: --key is needed: a chain without its key "
                                      "proves nothing\n"
                                    : "audit-verify: no files given\n",
                   stderr);
        std::fputs(usage, stderr);
        return 2;
    }
    std::string why;
    auto key = audit::read_key_file(key_file, why);
    if (!key) {
        std::fprintf(stderr, "audit-verify: %s\n", why.c_str());
        return 2;
    }
    std::optional<audit::chain_anchor> anchor;
    std::string anchor_said;
    if (anchor_file.empty()) {
        const auto beside = audit::audit_log::anchor_file(key_file);
        std::error_code ec;
        if (std::filesystem::exists(beside, ec)) anchor_file = beside.string();
    }
    if (!anchor_file.empty()) {
        anchor = audit::read_anchor_file(anchor_file, *key, why);
        if (!anchor) {
            std::fprintf(stderr, "audit-verify: the anchor is not valid: %s\n", why.c_str());
            return 1;
        }
        anchor_said = "anchor: " + anchor_file + " (seq " + std::to_string(anchor->seq) + ")\n";
    }
    std::string report;
    const int code = audit::verify_files(*key, anchor, files, report);
    std::fputs((anchor_said + report).c_str(), code == 0 ? stdout : stderr);
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace callisto;
    if (argc >= 2 && std::string(argv[1]) == "audit-verify")
        return audit_verify(std::vector<std::string>(argv + 2, argv + argc));
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
        std::string entry(*e);
        if (auto eq = entry.find('='); eq != std::string::npos)
            env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
    auto parsed =
        gateway::parse_server_config(std::vector<std::string>(argv + 1, argv + argc), env);
    if (!parsed.config) {
        std::fprintf(parsed.exit_code ? stderr : stdout, "%s\n", parsed.message.c_str());
        return parsed.exit_code;
    }
    if (parsed.print_config) {
        const auto shown = gateway::effective_config(gateway::with_host_defaults(*parsed.config));
        std::printf("%s\n", shown.dump(2).c_str());
        return 0;
    }
    std::signal(SIGPIPE, SIG_IGN);
    auto log =
        logger::to_stderr(parsed.config->log, parsed.config->log_format).component("callisto");
    if (auto said = fit_open_files(*parsed.config); !said.empty()) log.info(said);
    try {
        gateway::server server(*parsed.config, log);
        const auto& cfg = server.config();
        auto ep = server.local_endpoint();
        std::string host =
            ep.address().is_v6() ? "[" + ep.address().to_string() + "]" : ep.address().to_string();
        std::string url = std::string(cfg.certfile.empty() ? "http://" : "https://") + host + ":" +
                          std::to_string(ep.port()) + "/";
        if (!cfg.users_file.empty()) {
            std::printf("Callisto is serving on %s (users from %s)\n", url.c_str(),
                        cfg.users_file.c_str());
        } else if (!cfg.auth_enabled) {
            log.warn("authentication is OFF (--no-auth): anyone who reaches the port runs code");
            std::printf("Callisto is serving on %s\n", url.c_str());
        } else {
            std::printf("Callisto is serving on %s\n", url.c_str());
            std::printf("  token: %s%s\n", cfg.token.c_str(),
                        cfg.token_generated ? "  (generated; set --token or CALLISTO_TOKEN)" : "");
            std::printf("  open:  %s?token=%s\n", url.c_str(), cfg.token.c_str());
        }
        if (cfg.web_root.empty())
            std::printf("  (no web UI: the API only; --web-root=DIR serves one)\n");
        std::fflush(stdout);
        server.run();
    } catch (const std::exception& e) {
        log.error(std::string("cannot start: ") + e.what());
        return 1;
    }
    return 0;
}
