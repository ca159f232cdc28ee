#pragma once
// The /v1 routes: Callisto's own API for chat frontends and agents, next to the Jupyter one.

#include <functional>
#include <memory>

#include <boost/asio/thread_pool.hpp>

#include "gateway/http/http_message.hpp"
#include "gateway/interpreter/context_registry.hpp"
#include "gateway/interpreter/ndjson_stream.hpp"
#include "gateway/interpreter/oneshot_executions.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::interpreter {

// Takes the connection over for a streamed answer; called on the connection's strand, from
// inside handle(), at most once.
using take_stream_fn = std::function<std::shared_ptr<ndjson_stream>()>;

class interpreter_api {
public:
    explicit interpreter_api(context_registry& contexts);
    ~interpreter_api();

    // respond_file answers a download (GET .../files/{path}) with the file read as it is sent.
    void handle(const route& r, http_request req, const user& who, respond_fn respond,
                respond_file_fn respond_file, const take_stream_fn& take_stream);

    // The caller's context (an admin: any), or null for a malformed or unknown id.
    std::shared_ptr<interpreter_context> find_context(const std::string& id,
                                                      const user& who) const {
        return is_valid_kernel_id(id) ? contexts_.find_for(id, who) : nullptr;
    }
    const interpreter_settings& settings() const { return contexts_.settings(); }

    // The body limit of PUT /v1/contexts/{id}/files/{path} and of POST .../files (a form).
    std::size_t max_upload_bytes() const { return contexts_.settings().max_upload_bytes; }

private:
    // Runs on file_pool_: reads and writes of up to --upload-limit bytes block, and must not
    // hold up the I/O threads that serve every other client.
    void handle_files(const route& r, const http_request& req,
                      const std::shared_ptr<interpreter_context>& context, respond_fn respond,
                      respond_file_fn respond_file);
    void upload_form(const http_request& req, const std::shared_ptr<interpreter_context>& context,
                     respond_fn respond);
    void create_context(const http_request& req, const user& who, respond_fn respond);
    void create_execution(const std::shared_ptr<interpreter_context>& context,
                          const http_request& req, respond_fn respond,
                          const take_stream_fn& take_stream);
    void create_oneshot(const http_request& req, const user& who, respond_fn respond,
                        const take_stream_fn& take_stream);
    void handle_oneshot(const route& r, const user& who, respond_fn respond);
    // Submits to the context and answers with one JSON document at the end, or with the
    // NDJSON stream when `stream` is set. on_accepted runs first for a new execution,
    // on_refused when the context would not take it (closed, queue full).
    void submit_and_answer(const std::shared_ptr<interpreter_context>& context,
                           execution_request request, std::string location_prefix,
                           respond_fn respond, std::shared_ptr<ndjson_stream> stream,
                           std::function<void(const std::shared_ptr<execution>&)> on_accepted = {},
                           std::function<void()> on_refused = {});

    context_registry& contexts_;
    oneshot_executions oneshots_;
    boost::asio::thread_pool file_pool_{2};
};

}  // namespace callisto::gateway::interpreter
