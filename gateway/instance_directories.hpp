#pragma once
// The directories this gateway instance holds on the host: the workdir root, locked for the
// instance's life (sandboxed, or with --state-dir), and the runtime root, made at start and
// removed when the instance goes. What a dead previous instance left there is reaped, or
// adopted, when the instance takes them over.

#include <memory>

#include "common/logger.hpp"
#include "gateway/server_config.hpp"
#include "launcher/process/instance_lock.hpp"
#include "launcher/sandbox/sandbox.hpp"

namespace callisto::gateway {

class kernel_adoption;

class instance_directories {
public:
    // Locks the workdir root when sandboxed or with --state-dir: one live instance per root.
    instance_directories(const server_config& config, logger log);
    // Removes the runtime root, when take_over made it. Declared before the parts that run
    // kernels, it goes after them: the zygotes write in it until they are reaped, the kernels
    // keep their directories there.
    ~instance_directories();
    instance_directories(const instance_directories&) = delete;
    instance_directories& operator=(const instance_directories&) = delete;

    // Null when the workdir root is not locked.
    const launcher::instance_lock* workdir_lock() const { return workdir_lock_.get(); }

    // Makes the runtime root (searchable by the sandbox's uids when `box` is set), moves the
    // adopted kernels' runtime directories into it, reaps what a dead previous instance left
    // on this workdir root (sandboxed), sparing what `adoption` takes over, and records the
    // runtime root as this instance's in the lock.
    void take_over(const launcher::sandbox* box, kernel_adoption* adoption);

private:
    const server_config& config_;
    logger log_;
    std::unique_ptr<launcher::instance_lock> workdir_lock_;
    bool runtime_root_made_ = false;
};

}  // namespace callisto::gateway
