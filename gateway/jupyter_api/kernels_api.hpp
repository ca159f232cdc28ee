#pragma once
// The /api/kernels routes of the Kernel Gateway API (everything but the WebSocket).

#include <memory>
#include <string>

#include "gateway/http/http_message.hpp"
#include "gateway/http/incoming_request.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::jupyter_api {

class kernels_api {
public:
    explicit kernels_api(kernels::kernel_manager& kernels);

    // One method a route (the table in gateway/routes.cpp), {kernel_id} from the path. The
    // sender sees and touches only their own kernels (an admin: all).
    void list(incoming_request in);
    void create(incoming_request in);
    void get(incoming_request in);
    void remove(incoming_request in);
    void interrupt(incoming_request in);
    void restart(incoming_request in);

    // 410 Gone for a kernel culled within the retention period, else 404.
    http_response no_such_kernel(const std::string& id, const user& who) const;

private:
    // The sender's kernel the path names; null once the request is answered 404 (410 for a
    // kernel culled lately).
    std::shared_ptr<kernels::kernel_session> kernel_of(const incoming_request& in) const;

    kernels::kernel_manager& kernels_;
};

}  // namespace callisto::gateway::jupyter_api
