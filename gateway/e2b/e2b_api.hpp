#pragma once
// The HTTP adapter of the E2B-compatible facade: the control plane (sandboxes: create, list,
// getInfo, setTimeout, connect, kill) for the user whose token came as X-API-KEY, and a
// sandbox's data plane (/execute, /contexts, /health) for whoever holds the sandbox's access
// token. A sandbox is built on interpreter contexts (gateway/interpreter/): its default
// context's kernel, sandboxed, with its workdir; owners, quotas, the warm pool and the audit
// log apply as they do to /v1. Expired sandboxes are culled with their contexts.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "common/logger.hpp"
#include "gateway/e2b/e2b_requests.hpp"
#include "gateway/e2b/sandbox_registry.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/http/router.hpp"
#include "gateway/interpreter/context_registry.hpp"
#include "gateway/interpreter/interpreter_api.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::e2b {

struct e2b_settings {
    std::chrono::seconds default_timeout{300};  // E2B's: a sandbox lives 5 minutes by default
    std::chrono::milliseconds keepalive_every{5000};
    std::chrono::milliseconds cull_every{1000};
    request_limits limits;
    // Template names that mean "the default kernelspec": the SDKs' defaults.
    std::vector<std::string> default_templates{"code-interpreter-v1", "base"};
};

class e2b_api {
public:
    // `kernelspecs`: the names a templateID may give.
    e2b_api(boost::asio::io_context& ioc, interpreter::context_registry& contexts,
            std::vector<std::string> kernelspecs, e2b_settings settings, logger log);
    ~e2b_api();

    // Starts culling expired sandboxes.
    void start();
    // The server is stopping: culling stops (the contexts close with the registry's stop()).
    void stop();

    // `who` is null on the data plane (its own token is checked here).
    void handle(const route& r, http_request req, const user* who, respond_fn respond,
                respond_file_fn respond_file, const interpreter::take_stream_fn& take_stream);

private:
    void create_sandbox(const http_request& req, const user& who, respond_fn respond);
    void control(const route& r, const http_request& req, const user& who, respond_fn respond);
    void data_plane(const route& r, http_request req, const sandbox_record& box, respond_fn respond,
                    respond_file_fn respond_file, const interpreter::take_stream_fn& take_stream);
    void execute(const http_request& req, const sandbox_record& box, respond_fn respond,
                 const interpreter::take_stream_fn& take_stream);
    void create_context(const http_request& req, const sandbox_record& box, respond_fn respond);
    // envd's files: GET/POST /files and filesystem.Filesystem, on file_pool_ (blocking I/O
    // of up to --upload-limit bytes must not hold up the I/O threads).
    void envd(const route& r, http_request req, const sandbox_record& box, respond_fn respond,
              respond_file_fn respond_file);
    // process.Process/Start: the command as a bash execution of the default context.
    void start_process(const http_request& req, const sandbox_record& box, respond_fn respond,
                       const interpreter::take_stream_fn& take_stream);
    void envd_files_route(const route& r, const http_request& req,
                          const std::filesystem::path& workdir, respond_fn respond,
                          respond_file_fn respond_file);
    // Closes the sandbox's contexts (their kernels go by the reuse policy).
    void close_contexts(const sandbox_record& box);
    std::shared_ptr<interpreter::interpreter_context> context_of(const sandbox_record& box,
                                                                 const std::string& id) const;
    void arm_culling();

    boost::asio::io_context& ioc_;
    interpreter::context_registry& contexts_;
    const std::vector<std::string> kernelspecs_;
    const e2b_settings settings_;
    logger log_;
    sandbox_registry sandboxes_;
    boost::asio::steady_timer cull_timer_;
    bool stopped_ = false;  // the timer's strand
    boost::asio::thread_pool file_pool_{2};
};

// The sandbox a data-plane request is for: its E2b-Sandbox-Id header, else the host's first
// label when it is E2B's "<port>-<id>" shape. "" when neither.
std::string sandbox_id_of(const http_request& req);

}  // namespace callisto::gateway::e2b
