#pragma once
// The /api/kernels routes of the Kernel Gateway API (everything but the WebSocket).

#include "gateway/http/http_message.hpp"
#include "gateway/kernels/kernel_manager.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::jupyter_api {

class kernels_api {
public:
    explicit kernels_api(kernels::kernel_manager& kernels);

    // `who` sees and touches only their own kernels (an admin: all).
    void handle(const route& r, const http_request& req, const user& who, respond_fn respond);

    // 410 Gone for a kernel culled within the retention period, else 404.
    http_response no_such_kernel(const std::string& id, const user& who) const;

private:
    void create(const http_request& req, const user& who, respond_fn respond);

    kernels::kernel_manager& kernels_;
};

}  // namespace callisto::gateway::jupyter_api
