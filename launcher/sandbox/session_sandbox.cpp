#include "launcher/sandbox/session_sandbox.hpp"

#include <stdexcept>

#include "kernelproto/ids.hpp"
#include "launcher/sandbox/kernel_cgroup.hpp"
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
        // Its own name, not the kernel's alone: a kernel renewed with a new sandbox may make
        // the next while its last start, which still holds the old cgroup, is being reaped.
        cgroup_ = box_.make_cgroup(name + "-" + kernelproto::random_hex(3), policy_);
    } catch (...) {
        workdir_.reset();
        uids_.release(who_);
        throw;
    }
}

session_sandbox::session_sandbox(adopt_existing_t, const sandbox& box, sandbox_uid_pool& uids,
                                 std::filesystem::path workdir, uid_t uid,
                                 const std::string& cgroup_name, const sandbox_policy& defaults,
                                 const kernelspec& spec)
    : box_(box), uids_(uids), policy_(policy_for(defaults, spec)) {
    // The cgroup first: when it is gone, nothing else has been taken yet.
    cgroup_ = box_.adopt_cgroup(cgroup_name);
    auto who = uids_.acquire(uid);
    if (!who)
        throw std::runtime_error("uid " + std::to_string(uid) +
                                 " is outside --sandbox-uids or taken by another kernel");
    who_ = *who;
    workdir_ = std::make_unique<session_workdir>(adopt_existing, std::move(workdir),
                                                 policy_.disk_bytes > 0);
}

session_sandbox::~session_sandbox() {
    // The processes go before their files: a kernel's start still running holds the cgroup
    // on, and is killed by its supervisor (the caller) rather than here.
    cgroup_.reset();
    workdir_.reset();
    uids_.release(who_);
}

std::string session_sandbox::cgroup_name() const { return cgroup_ ? cgroup_->name() : ""; }

std::shared_ptr<sandboxed_kernel> session_sandbox::prepare(
    const spawn_description& inner, const kernel_runtime_dir& runtime) const {
    return box_.prepare(inner, policy_, who_, workdir_->path(), runtime.path(),
                        runtime.connection_file(), cgroup_);
}

std::shared_ptr<sandboxed_kernel> session_sandbox::adopt_running() const {
    return box_.adopt(policy_, who_, cgroup_);
}

}  // namespace callisto::launcher
