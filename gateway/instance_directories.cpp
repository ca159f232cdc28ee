#include "gateway/instance_directories.hpp"

#include <filesystem>
#include <string>

#include "gateway/kernel_adoption.hpp"
#include "launcher/sandbox/leftover_reaper.hpp"

namespace callisto::gateway {

namespace fs = std::filesystem;

namespace {

void prepare_runtime_root(const fs::path& root, bool sandboxed) {
    fs::create_directories(root);
    // Sandboxed kernels run as other uids and must traverse it to reach their own 0700 dir.
    fs::permissions(root,
                    sandboxed
                        ? fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec
                        : fs::perms::owner_all,
                    fs::perm_options::replace);
}

// A previous instance on this workdir root that died without cleaning up (SIGKILL, a crash)
// left its kernels, workdir mounts, cgroups and runtime root; the lock says it is gone.
void reap_leftovers(const server_config& config, const launcher::instance_lock& lock,
                    const launcher::sandbox& box, const kernel_adoption* adoption,
                    const logger& log) {
    launcher::leftover_scope scope;
    scope.workdir_root = lock.root();
    scope.uid_first = config.sandbox_uid_first;
    scope.uid_count = config.sandbox_uid_count;
    scope.cgroups = box.cgroups();
    scope.tag = lock.tag();
    // The same --runtime-dir as before is ours again (adopted kernels keep their directories
    // there); a previous one goes.
    std::error_code ec;
    const auto& previous = lock.previous_runtime_root();
    if (previous && !fs::equivalent(*previous, config.kernels.runtime_root, ec))
        scope.runtime_root = previous;
    if (adoption) adoption->spare_in(scope);
    const auto report = launcher::leftover_reaper(scope).reap();
    log.info("leftovers of earlier instances on " + lock.root().string() + " (tag " + lock.tag() +
             "): " + report.describe());
    if (!report.problems.empty()) {
        std::string all;
        for (const auto& p : report.problems) all += (all.empty() ? "" : "; ") + p;
        log.warn("not reaped: " + all);
    }
}

}  // namespace

instance_directories::instance_directories(const server_config& config, logger log)
    : config_(config),
      log_(std::move(log)),
      workdir_lock_(config.sandbox || !config.state_dir.empty()
                        ? std::make_unique<launcher::instance_lock>(config.kernels.workdir_root)
                        : nullptr) {}

instance_directories::~instance_directories() {
    if (!runtime_root_made_) return;
    const auto& path = config_.kernels.runtime_root;
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec)
        log_.warn("could not remove the runtime directory " + path.string() + ": " + ec.message());
}

void instance_directories::take_over(const launcher::sandbox* box, kernel_adoption* adoption) {
    const auto& runtime_root = config_.kernels.runtime_root;
    prepare_runtime_root(runtime_root, box != nullptr);
    runtime_root_made_ = true;
    if (adoption) adoption->move_runtime_dirs(runtime_root);
    if (workdir_lock_ && box)
        reap_leftovers(config_, *workdir_lock_, *box, adoption, log_.component("sandbox"));
    if (workdir_lock_) workdir_lock_->claim_runtime_root(runtime_root);
}

}  // namespace callisto::gateway
