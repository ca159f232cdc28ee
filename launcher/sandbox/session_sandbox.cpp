#include "launcher/sandbox/session_sandbox.hpp"

#include <stdexcept>

#include "launcher/sandbox/sandboxed_kernel.hpp"

namespace callisto::launcher {

namespace {

sandbox_policy policy_for(const sandbox_policy& defaults, const kernelspec& spec) {
    const auto callisto = spec.metadata.find("callisto");
    if (callisto == spec.metadata.end() || !callisto->is_object()) return defaults;
    if (!callisto->contains("limits")) return defaults;
    try {
        return defaults.with_overrides(callisto->at("limits"));
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error("kernelspec " + spec.name + ": metadata.callisto." + e.what());
    }
}

}  // namespace

session_sandbox::session_sandbox(const sandbox& box, sandbox_uid_pool& uids,
                                 const std::filesystem::path& workdir_root, const std::string& name,
                                 const sandbox_policy& defaults, const kernelspec& spec)
    : box_(box), uids_(uids), policy_(policy_for(defaults, spec)) {
    auto who = uids_.acquire();
    if (!who) throw std::runtime_error("every sandbox uid is in use; raise --sandbox-uids");
    who_ = *who;
    try {
        workdir_ = std::make_unique<session_workdir>(workdir_root, name, who_, policy_.disk_bytes);
    } catch (...) {
        uids_.release(who_);
        throw;
    }
}

session_sandbox::session_sandbox(adopt_existing_t, const sandbox& box, sandbox_uid_pool& uids,
                                 std::filesystem::path workdir, uid_t uid,
                                 const sandbox_policy& defaults, const kernelspec& spec)
    : box_(box), uids_(uids), policy_(policy_for(defaults, spec)) {
    auto who = uids_.acquire(uid);
    if (!who)
        throw std::runtime_error("uid " + std::to_string(uid) +
                                 " is outside --sandbox-uids or taken by another kernel");
    who_ = *who;
    workdir_ = std::make_unique<session_workdir>(adopt_existing, std::move(workdir),
                                                 policy_.disk_bytes > 0);
}

session_sandbox::~session_sandbox() {
    workdir_.reset();
    uids_.release(who_);
}

std::shared_ptr<sandboxed_kernel> session_sandbox::prepare(
    const spawn_description& inner, const kernel_runtime_dir& runtime) const {
    return box_.prepare(inner, policy_, who_, workdir_->path(), runtime.path(),
                        runtime.connection_file(), runtime.path().filename().string());
}

}  // namespace callisto::launcher
