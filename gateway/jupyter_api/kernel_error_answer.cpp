#include "gateway/jupyter_api/kernel_error_answer.hpp"

#include "gateway/http/beast.hpp"
#include "gateway/http/json_response.hpp"

namespace callisto::gateway::jupyter_api {

http_response kernel_error_answer(kernels::kernel_error error, const std::string& message) {
    using kernels::kernel_error;
    http::status status = http::status::internal_server_error;
    switch (error) {
        case kernel_error::no_such_kernelspec: status = http::status::not_found; break;
        case kernel_error::id_taken: status = http::status::conflict; break;
        case kernel_error::user_over_limit:
        case kernel_error::server_over_limit: status = http::status::too_many_requests; break;
        case kernel_error::shutting_down: status = http::status::service_unavailable; break;
        case kernel_error::not_running: status = http::status::conflict; break;
        case kernel_error::none:
        case kernel_error::kernelspec_refused:  // the server's fault: its admin must act
        case kernel_error::start_failed: break;
    }
    auto res = error_response(status, message);
    // Only where waiting can help: the user's own quota frees when they free a kernel.
    if (error == kernel_error::server_over_limit) res.set(http::field::retry_after, "10");
    return res;
}

}  // namespace callisto::gateway::jupyter_api
