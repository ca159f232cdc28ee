#include "gateway/state_stores.hpp"

#include <stdexcept>
#include <string>

namespace callisto::gateway {

namespace {

template <typename store>
std::unique_ptr<store> state_store(const server_config& config, const char* subdirectory,
                                   const logger& log) {
    if (config.state_dir.empty()) return nullptr;
    return std::make_unique<store>(config.state_dir / subdirectory, log.component("state"));
}

// --audit-log: opened (or continued) at start; a file that cannot be opened, a key or anchor
// that is not valid, or (with --audit-required) a log cut short stops the start.
std::unique_ptr<audit::audit_log> make_audit_log(const server_config& config, const logger& log) {
    if (config.audit.file.empty()) return nullptr;
    try {
        return std::make_unique<audit::audit_log>(config.audit, log);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("--audit-log: ") + e.what());
    }
}

}  // namespace

state_stores::state_stores(const server_config& config, const logger& log)
    : state_lock_(config.state_dir.empty()
                      ? nullptr
                      : std::make_unique<directory_lock>(config.state_dir, "--state-dir")),
      kernel_records_(state_store<kernels::kernel_record_store>(config, "kernels", log)),
      context_records_(state_store<interpreter::context_record_store>(config, "contexts", log)),
      paused_records_(state_store<interpreter::paused_record_store>(config, "paused", log)),
      sandbox_records_(state_store<e2b::sandbox_record_store>(config, "e2b-sandboxes", log)),
      audit_(make_audit_log(config, log.component("audit"))),
      websocket_audit_(
          audit_ ? std::make_unique<jupyter_api::execution_audit>(*audit_, log.component("audit"))
                 : nullptr) {}

state_stores::~state_stores() = default;

}  // namespace callisto::gateway
