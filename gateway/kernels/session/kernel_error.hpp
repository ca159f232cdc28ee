#pragma once
// Why the kernels layer refused a request or failed it. The APIs decide what each means to
// their clients (gateway/jupyter_api/kernel_error_answer.hpp: an HTTP status); this layer knows
// no HTTP.

#include <string>
#include <string_view>

namespace callisto::gateway::kernels {

enum class kernel_error {
    none,
    no_such_kernelspec,  // the name matches no kernelspec
    kernelspec_refused,  // the kernelspec was refused at start: its interpreter cannot run here
    id_taken,            // the asked-for kernel id is another owner's, or another kernelspec's
    user_over_limit,     // the owner's kernel quota: waiting does not help, freeing one does
    server_over_limit,   // the server's --max-kernels: others' kernels may finish
    shutting_down,       // the server is stopping
    start_failed,        // the kernel did not become ready
    not_running,         // the kernel is not running (dead, starting, stopping)
};

std::string_view to_string(kernel_error e);

// How an asynchronous kernel operation (start, restart, interrupt) ended.
struct kernel_outcome {
    kernel_error error = kernel_error::none;
    std::string message;  // what happened, when it failed

    bool ok() const { return error == kernel_error::none; }
};

}  // namespace callisto::gateway::kernels
