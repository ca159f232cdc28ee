#pragma once
// The HTTP adapter of the E2B-compatible facade: the control plane (sandboxes: create, list,
// getInfo, setTimeout, connect, kill) for the user whose token came as X-API-KEY, and a
// sandbox's data plane (/execute, /contexts, /health, and envd's /files, filesystem and process
// services) for whoever holds the sandbox's access token. A sandbox is built on interpreter
// contexts (gateway/interpreter/): its default context's kernel, sandboxed, with its workdir;
// owners, quotas, the warm pool and the audit log apply as they do to /v1. Expired sandboxes
// are culled with their contexts.

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "common/logger.hpp"
#include "gateway/e2b/e2b_requests.hpp"
#include "gateway/e2b/process_table.hpp"
#include "gateway/e2b/sandbox_registry.hpp"
#include "gateway/e2b/sandbox_templates.hpp"
#include "gateway/e2b/watcher_table.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/http/incoming_request.hpp"
#include "gateway/interpreter/api/interpreter_api.hpp"
#include "gateway/interpreter/context_registry.hpp"
#include "gateway/user.hpp"
#include "launcher/sandbox/seccomp_filter.hpp"

namespace callisto::gateway::e2b {

struct e2b_settings {
    std::chrono::seconds default_timeout{300};  // E2B's: a sandbox lives 5 minutes by default
    std::chrono::milliseconds keepalive_every{5000};
    std::chrono::milliseconds cull_every{1000};
    request_limits limits;
    // Template names that mean "the default kernelspec": the SDKs' defaults.
    std::vector<std::string> default_templates{"code-interpreter-v1", "base"};
    // The templates the admin declared (--e2b-template): they win over a kernelspec's name
    // and the SDKs' defaults.
    std::vector<sandbox_template> templates;
    // callisto-enter (launcher/zygote/enter_main.cpp): commands run through it in the sandbox.
    std::filesystem::path enter_program;
    // Commands running at once in one sandbox, and listeners (streams) on one command.
    std::size_t max_processes = 64;
    // --e2b-domain, lower case: data-plane hosts "<port>-<id>.<domain>" name their sandbox.
    // Empty: any host's first label of that shape does.
    std::string domain;
    // --state-dir's record of each sandbox (null: sandboxes end with the gateway).
    sandbox_record_store* records = nullptr;
};

// One sandbox as an operator sees it (the admin console): its record and how many of its
// commands run now.
struct sandbox_summary {
    sandbox_record record;
    std::size_t commands = 0;
};

class e2b_api {
public:
    // `kernelspecs`: the names a templateID may give.
    e2b_api(boost::asio::io_context& ioc, interpreter::context_registry& contexts,
            std::vector<std::string> kernelspecs, e2b_settings settings, logger log);
    ~e2b_api();

    // After the contexts an earlier gateway recorded are restored: the sandboxes it recorded,
    // each with those of its contexts that came back (a sandbox whose default context did
    // not, or past its end, is closed); an E2B context no sandbox claims is closed.
    void restore();
    // Starts culling expired sandboxes.
    void start();
    // The server is stopping: culling stops, the sandboxes end and their records go (the
    // contexts close with the registry's stop()).
    void stop();

    // Every sandbox on the server, whoever owns it.
    std::vector<sandbox_summary> all_sandboxes() const;

    // One method a route of the table (gateway/routes.cpp). The control plane: the caller is
    // the user whose token came as X-API-KEY (in.who, checked by the dispatcher).
    void list_sandboxes(incoming_request in);  // GET /v2/sandboxes?metadata=, GET /sandboxes
    void create_sandbox(incoming_request in);  // POST /v2/sandboxes
    void get_sandbox(incoming_request in);     // GET /sandboxes/{sandbox_id}
    void kill_sandbox(incoming_request in);    // DELETE /sandboxes/{sandbox_id}
    void set_timeout(incoming_request in);     // POST /sandboxes/{sandbox_id}/timeout
    void connect(incoming_request in);         // POST /v2/sandboxes/{sandbox_id}/connect
    // The data plane: no user; the sandbox's access token is checked here.
    void execute(incoming_request in, const interpreter::take_stream_fn& take_stream);
    void list_contexts(incoming_request in);    // GET /contexts
    void create_context(incoming_request in);   // POST /contexts
    void delete_context(incoming_request in);   // DELETE /contexts/{context_id}
    void restart_context(incoming_request in);  // POST /contexts/{context_id}/restart
    void health(incoming_request in);           // GET /health
    // envd: the sandbox's files (its default context's workdir) and commands.
    void read_file(incoming_request in);   // GET /files?path=
    void write_file(incoming_request in);  // POST /files?path=
    // POST /filesystem.Filesystem/{method}: WatchDir streams (directory_watch.hpp); the
    // polling watchers keep their events in watcher_table.
    void call_filesystem(incoming_request in, const interpreter::take_stream_fn& take_stream);
    // POST /process.Process/{method}: Start and Connect stream; List, SendInput, SendSignal and
    // CloseStdin answer at once. A command runs as its own process in the sandbox of the
    // default context's kernel, beside it (sandbox_process.hpp).
    void call_process(incoming_request in, const interpreter::take_stream_fn& take_stream);

private:
    // The sandbox a data-plane request names with its own token, or none, answered already
    // (404 without a sandbox id, 401 for an unknown sandbox or another's token).
    std::optional<sandbox_record> sandbox_of(const incoming_request& in) const;
    // The {context_id} of that sandbox, and the sandbox's id; or none, answered (as above, or
    // 404 for a context that is not the sandbox's).
    std::shared_ptr<interpreter::interpreter_context> path_context(const incoming_request& in,
                                                                   std::string& sandbox_id) const;
    // Closes the sandbox's contexts (their kernels go by the reuse policy).
    void close_contexts(const sandbox_record& box);
    std::shared_ptr<interpreter::interpreter_context> context_of(const sandbox_record& box,
                                                                 const std::string& id) const;
    void arm_culling();
    // The sandbox's tree, once its token is checked; none, answered, when it is gone.
    std::optional<std::filesystem::path> files_of(const incoming_request& in) const;
    std::optional<std::filesystem::path> files_of(const incoming_request& in,
                                                  const sandbox_record& box) const;
    // On file_pool_: blocking I/O of up to --upload-limit bytes must not hold up the I/O
    // threads.
    void read_file_now(incoming_request in, const std::filesystem::path& workdir);
    void write_file_now(incoming_request in, const std::filesystem::path& workdir);
    void start_process(incoming_request in, const sandbox_record& box,
                       const interpreter::take_stream_fn& take_stream);
    void watch_dir(incoming_request in, const std::filesystem::path& workdir,
                   const interpreter::take_stream_fn& take_stream);
    // envd's polling watchers (watcher_table.hpp): CreateWatcher; GetWatcherEvents and
    // RemoveWatcher.
    void create_watcher(incoming_request in, const std::string& sandbox_id,
                        const std::filesystem::path& workdir);
    void poll_watcher(incoming_request in, const std::string& sandbox_id);
    void connect_process(incoming_request in, const sandbox_record& box,
                         const interpreter::take_stream_fn& take_stream);
    void list_processes(incoming_request in, const sandbox_record& box);
    void send_input(incoming_request in, const sandbox_record& box);
    void send_signal(incoming_request in, const sandbox_record& box);
    void close_stdin(incoming_request in, const sandbox_record& box);
    // Kills the sandbox's commands (it is going).
    void kill_processes(const std::string& sandbox_id);

    boost::asio::io_context& ioc_;
    interpreter::context_registry& contexts_;
    const e2b_settings settings_;
    const sandbox_templates templates_;
    logger log_;
    sandbox_registry sandboxes_;
    process_table processes_;
    watcher_table watchers_;
    const launcher::seccomp_filter seccomp_;  // the kernels' own, for their commands
    boost::asio::steady_timer cull_timer_;
    bool stopped_ = false;  // the timer's strand
    boost::asio::thread_pool file_pool_{2};
};

// The sandbox a Host header names in E2B's shape, "<port>-<id>.<domain>" (a ":port" after it
// allowed). With a `domain` (--e2b-domain), only a host of exactly that shape under that
// domain names one, the port a number; without, any host's first label of the shape does.
// "" when the host names none.
std::string sandbox_id_from_host(std::string_view host, std::string_view domain);

// The sandbox a data-plane request is for: its E2b-Sandbox-Id header, else its host
// (sandbox_id_from_host). "" when neither names one.
std::string sandbox_id_of(const http_request& req, std::string_view domain);

}  // namespace callisto::gateway::e2b
