#include "gateway/kernels/session/kernel_error.hpp"

namespace callisto::gateway::kernels {

std::string_view to_string(kernel_error e) {
    switch (e) {
        case kernel_error::none: return "none";
        case kernel_error::no_such_kernelspec: return "no_such_kernelspec";
        case kernel_error::kernelspec_refused: return "kernelspec_refused";
        case kernel_error::id_taken: return "id_taken";
        case kernel_error::user_over_limit: return "user_over_limit";
        case kernel_error::server_over_limit: return "server_over_limit";
        case kernel_error::shutting_down: return "shutting_down";
        case kernel_error::start_failed: return "start_failed";
        case kernel_error::not_running: return "not_running";
    }
    return "?";
}

}  // namespace callisto::gateway::kernels
