#pragma once
// The MCP tools of one session, carried out in interpreter contexts of its own, one per kernel
// its calls need: the default kernel's (Python: python, bash and sql), and R's once a call
// names "r". Each is created on the first call that needs it (so a client that only lists
// tools costs no kernel), owned by the session's user (owners and kernel quotas apply as for
// /v1), and deleted when the session ends. A context whose kernel is gone (culled, or shut
// down by an admin) is replaced by a new one on the next call, and the model is told its
// state is lost.
// Everything goes through the interpreter classes: submit() for code, workdir_files for files,
// interpreter_api's *_for operations for snapshots, forks, pause and resume (so the checks,
// quotas, audit lines and errors are /v1's). Contexts those make (restore, fork) are the
// user's, as over /v1: run_code, the file tools and restart_context reach them by context_id,
// and they outlive the session.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/logger.hpp"
#include "gateway/interpreter/api/interpreter_api.hpp"
#include "gateway/interpreter/context_registry.hpp"
#include "gateway/mcp/tool_backend.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::mcp {

class context_tools : public tool_backend, public std::enable_shared_from_this<context_tools> {
public:
    context_tools(interpreter::context_registry& contexts, interpreter::interpreter_api& api,
                  user owner, std::size_t max_read_bytes, logger log);

    void call(const std::string& call_id, tool_call call,
              std::function<void(nlohmann::json)> done) override;
    void cancel(const std::string& call_id) override;
    void close() override;

private:
    using context_ptr = std::shared_ptr<interpreter::interpreter_context>;
    using context_fn = std::function<void(context_ptr, std::string error)>;

    // The session's context for `language` (none: the default kernel's), created on first
    // use; concurrent first calls share one creation.
    void with_context(const tool_language& language, context_fn fn);
    void on_created(const std::string& kernel, interpreter::create_context_result r);

    // One call in the context it names or the session's context it needs.
    void carry_out(const context_ptr& c, const std::string& call_id, const tool_call& call,
                   std::function<void(nlohmann::json)> done);
    // The calls that name their context or snapshot by id (or need none): carried out without
    // the session's context. False: not one of them.
    bool call_by_id(const std::string& call_id, const tool_call& call,
                    const std::function<void(nlohmann::json)>& done);
    void run_code(const context_ptr& c, const std::string& call_id, const run_code_args& a,
                  std::function<void(nlohmann::json)> done);
    void on_submitted(const context_ptr& c, const std::string& call_id,
                      const std::string& execution_id);
    void forget_call(const std::string& call_id);
    void restart(const context_ptr& c, std::function<void(nlohmann::json)> done);
    nlohmann::json upload(const context_ptr& c, const upload_file_args& a) const;
    nlohmann::json list(const context_ptr& c, const list_files_args& a) const;
    nlohmann::json read(const context_ptr& c, const read_file_args& a) const;

    interpreter::context_registry& contexts_;
    interpreter::interpreter_api& api_;
    const user owner_;
    const std::size_t max_read_bytes_;
    logger log_;

    std::mutex mutex_;
    struct kernel_context {
        context_ptr context;
        bool creating = false;
        std::vector<context_fn> waiting;
    };
    std::map<std::string, kernel_context> contexts_by_kernel_;  // by kernelspec name
    bool closed_ = false;
    // Said once, with the next result, when a culled or dead kernel was replaced.
    std::string notice_;
    // run_code calls in flight, by call id: cancel() interrupts their execution.
    struct pending_call {
        context_ptr context;       // null until the context accepted it
        std::string execution_id;  // empty until the context accepted it
        bool cancelled = false;
    };
    std::map<std::string, pending_call> calls_;
};

}  // namespace callisto::gateway::mcp
