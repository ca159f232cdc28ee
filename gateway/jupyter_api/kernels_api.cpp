#include "gateway/jupyter_api/kernels_api.hpp"

#include <boost/beast/http/field.hpp>

#include "gateway/jupyter_api/kernel_error_answer.hpp"
#include "kernelproto/iso_time.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::jupyter_api {

namespace {

// Only an admin sees the process behind a kernel (kernel_model.hpp).
kernels::kernel_process_view process_view(const user& who) {
    return who.admin ? kernels::kernel_process_view::shown : kernels::kernel_process_view::hidden;
}

// Kernel Gateway passes only KERNEL_-prefixed variables from the request to the kernel.
bool allowed_kernel_env(const std::string& name) { return name.rfind("KERNEL_", 0) == 0; }

}  // namespace

http_response kernels_api::no_such_kernel(const std::string& id, const user& who) const {
    if (auto culled = kernels_.culled_for(id, who)) {
        // Gone, not unknown: the client learns when and why, for the retention period.
        return json_response(http::status::gone,
                             {{"reason", "culled"},
                              {"culled_at", kernelproto::format_iso_time(culled->culled_at)},
                              {"message", "Kernel " + id + " was culled: " + culled->reason}});
    }
    return error_response(http::status::not_found, "Kernel does not exist: " + id);
}

kernels_api::kernels_api(kernels::kernel_manager& kernels) : kernels_(kernels) {}

std::shared_ptr<kernels::kernel_session> kernels_api::kernel_of(const incoming_request& in) const {
    const std::string& id = in.where.param("kernel_id");
    auto kernel = is_valid_kernel_id(id) ? kernels_.find_for(id, *in.who) : nullptr;
    if (!kernel) in.respond(no_such_kernel(id, *in.who));
    return kernel;
}

void kernels_api::list(incoming_request in) {
    const user& who = *in.who;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& k : kernels_.list_for(who)) list.push_back(k->model(process_view(who)));
    in.respond(json_response(http::status::ok, list));
}

void kernels_api::get(incoming_request in) {
    auto kernel = kernel_of(in);
    if (!kernel) return;
    in.respond(json_response(
        http::status::ok,
        kernel->model(in.who->admin ? kernels::kernel_process_view::shown_with_fresh_memory
                                    : kernels::kernel_process_view::hidden)));
}

void kernels_api::remove(incoming_request in) {
    if (!kernel_of(in)) return;
    const std::string& id = in.where.param("kernel_id");
    kernels_.remove(id, [this, respond = std::move(in.respond), id, who = *in.who](bool found) {
        respond(found ? empty_response(http::status::no_content) : no_such_kernel(id, who));
    });
}

void kernels_api::interrupt(incoming_request in) {
    auto kernel = kernel_of(in);
    if (!kernel) return;
    kernel->interrupt([respond = std::move(in.respond)](kernels::kernel_outcome done) {
        respond(done.ok() ? empty_response(http::status::no_content)
                          : kernel_error_answer(done.error, done.message));
    });
}

void kernels_api::restart(incoming_request in) {
    auto kernel = kernel_of(in);
    if (!kernel) return;
    kernel->restart([respond = std::move(in.respond), kernel,
                     view = process_view(*in.who)](kernels::kernel_outcome done) {
        respond(done.ok() ? json_response(http::status::ok, kernel->model(view))
                          : error_response(http::status::internal_server_error,
                                           "restart failed: " + done.message));
    });
}

void kernels_api::create(incoming_request in) {
    const http_request& req = in.req;
    const user& who = *in.who;
    const respond_fn& respond = in.respond;
    kernels::create_kernel_request request;
    request.owner = who;
    if (!req.body().empty()) {
        auto parsed = kernelproto::parse_untrusted_json(req.body());
        auto& body = parsed.value;
        if (!parsed.ok() || !body.is_object())
            return respond(error_response(http::status::bad_request,
                                          "request body must be a JSON object" +
                                              (parsed.ok() ? "" : " (" + parsed.problem() + ")")));
        if (body.contains("name")) {
            if (!body["name"].is_string() && !body["name"].is_null())
                return respond(
                    error_response(http::status::bad_request, "'name' must be a string"));
            if (body["name"].is_string()) request.name = body["name"].get<std::string>();
        }
        if (body.contains("env")) {
            if (!body["env"].is_object())
                return respond(
                    error_response(http::status::bad_request, "'env' must be an object"));
            for (auto& [key, value] : body["env"].items()) {
                if (!value.is_string())
                    return respond(error_response(http::status::bad_request,
                                                  "env value for '" + key + "' must be a string"));
                if (allowed_kernel_env(key)) request.env[key] = value.get<std::string>();
            }
        }
        // The client may choose the id (Kernel Gateway reads env.KERNEL_ID; "kernel_id" too),
        // which makes create idempotent.
        std::string chosen;
        if (body.contains("kernel_id")) {
            if (!body["kernel_id"].is_string())
                return respond(
                    error_response(http::status::bad_request, "'kernel_id' must be a string"));
            chosen = body["kernel_id"].get<std::string>();
        } else if (auto it = request.env.find("KERNEL_ID"); it != request.env.end()) {
            chosen = it->second;
        }
        if (!chosen.empty() && !is_valid_kernel_id(chosen))
            return respond(
                error_response(http::status::bad_request, "'kernel_id' must be a lower-case UUID"));
        request.kernel_id = chosen;
    }
    kernels_.create(std::move(request), [respond = std::move(in.respond), view = process_view(who)](
                                            kernels::create_kernel_result r) {
        if (!r.kernel) return respond(kernel_error_answer(r.error, r.message));
        auto res = json_response(r.created ? http::status::created : http::status::ok,
                                 r.kernel->model(view));
        res.set(http::field::location, "/api/kernels/" + r.kernel->id());
        respond(std::move(res));
    });
}

}  // namespace callisto::gateway::jupyter_api
