#pragma once
// The contexts of the interpreter API: creates each one's kernel through the kernel_manager
// (so owners, quotas, the warm pool and the reuse policy apply), finds them for their owner,
// removes them, and forgets them when their kernel goes away underneath (deleted through the
// Jupyter API, culled: such ids then answer 410 for the culling retention period).

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gateway/interpreter/context_request.hpp"
#include "gateway/interpreter/interpreter_context.hpp"
#include "gateway/interpreter/interpreter_settings.hpp"
#include "gateway/interpreter/paused_context.hpp"
#include "gateway/kernels/lifecycle/culled_kernels.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/languages/execution_language.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::interpreter {

struct create_context_result {
    std::shared_ptr<interpreter_context> context;  // null on failure
    kernels::kernel_error error = kernels::kernel_error::none;
    std::string message;
};

class context_registry {
public:
    context_registry(boost::asio::io_context& ioc, kernels::kernel_manager& kernels,
                     interpreter_settings settings, logger log);

    const interpreter_settings& settings() const { return settings_; }
    // The kernelspec a request naming none gets.
    std::string default_kernel() const { return kernels_.default_kernel_name(); }
    // GET /v1/languages: which kernelspec runs which language.
    nlohmann::json languages() const;
    // A request naming a language but no kernel gets the kernel that runs it; one naming both
    // must name a kernel that runs it. nullopt, or why not (for a 400).
    [[nodiscard]] std::optional<std::string> choose_kernel(context_request& request) const;
    // The dialect of the kernelspec named `kernel` (a paused context's, which has no kernel to
    // ask); python for one no longer installed, as a paused context's was before R could be.
    languages::kernel_dialect dialect_of_kernel(const std::string& kernel) const;

    // Brings back the contexts an earlier gateway recorded (--state-dir) whose kernels were
    // adopted (registered with the kernel manager, maybe still connecting), under their ids
    // and with their executions; the other records go.
    void restore(context_record_store& records);

    // Completion on an arbitrary thread. `id`: the id the context gets (a paused context
    // resuming keeps its own); empty: a new one.
    void create(const context_request& request, const user& owner,
                std::function<void(create_context_result)> done, std::string id = {});
    // Others' contexts are answered as if they did not exist; admins see all. A paused
    // context (or one resuming) is not found here: paused_for finds it.
    std::shared_ptr<interpreter_context> find_for(const std::string& id, const user& who) const;
    std::vector<std::shared_ptr<interpreter_context>> list_for(const user& who) const;

    // Paused contexts (issue 37; paused_context.hpp). The registry keeps their records and runs
    // them through pause and resume; the interpreter API takes and loads their snapshots.
    struct paused_view {
        paused_record record;
        bool resuming = false;
    };
    std::optional<paused_view> paused_for(const std::string& id, const user& who) const;
    std::vector<paused_view> list_paused_for(const user& who) const;
    std::size_t paused_count() const;
    // The context, idle and registered, becomes `record` (saved with --state-dir): it is
    // closed ("the context was paused") and its kernel shut down, its workdir with it. "" or
    // why not (busy again, deleted meanwhile): then nothing changed.
    [[nodiscard]] std::string pause(const std::shared_ptr<interpreter_context>& context,
                                    paused_record record);
    // A paused context of `who` starts resuming (begin: the caller runs it and calls
    // finish_resume), or `w` joins the resume that runs (joined); unknown: no such context.
    paused_table::resume_start start_resume(const std::string& id, const user& who,
                                            paused_table::waiter w, paused_record* record);
    // The resume ended: `made` (registered under the paused id, or null on a failure) becomes
    // the context; every waiter is told. On a failure the context stays paused.
    void finish_resume(const std::string& id, const std::shared_ptr<interpreter_context>& made,
                       const paused_table::outcome& how);
    // A paused context deleted: its record goes (the caller deletes its snapshot).
    paused_table::remove_result remove_paused(const std::string& id, const user& who,
                                              paused_record* removed);
    // The paused contexts past their --paused-ttl at `now` removed, records and all (not one
    // resuming): what was removed, for the caller to delete their snapshots.
    std::vector<paused_record> remove_expired(std::chrono::system_clock::time_point now);
    // At start: the paused contexts an earlier gateway recorded, each whose snapshot
    // `snapshot_exists` finds; the others are dropped with a warning. Returns the snapshot
    // ids kept.
    std::vector<std::string> restore_paused(
        const std::function<bool(const paused_record&)>& snapshot_exists);
    boost::asio::io_context& io_context() { return ioc_; }
    logger& log() { return log_; }
    // A context of `who` whose kernel was culled within the retention period.
    std::optional<kernels::culled_kernel> culled_for(const std::string& id, const user& who) const;
    // Closes the context and removes its own directory; its kernel is kept for the owner
    // (reuse policy, within the recycling limits, idle) or shut down.
    void remove(const std::shared_ptr<interpreter_context>& context, std::function<void()> done);
    // The same, posted: for callers that hold locks (an execution's event sinks).
    void remove_later(const std::shared_ptr<interpreter_context>& context);
    // The server is stopping: every context closes, so what is queued or running ends now
    // with "the server is stopping" (its waiting clients get that answer before their
    // connections close), and kernels of removed contexts are shut down, not reset and kept.
    void stop();
    // Once the kernels are gone: the contexts go, with their own directories.
    void remove_all();

private:
    // Makes it findable, forgets it when its kernel goes, and opens it.
    void add(const std::shared_ptr<interpreter_context>& context);
    void forget(const std::shared_ptr<interpreter_context>& context, const std::string& reason);
    void release_kernel(const std::shared_ptr<interpreter_context>& context,
                        std::function<void()> done);
    void remove_own_dir(const std::shared_ptr<interpreter_context>& context) const;
    // Another context works in its files (context_request::share_files_with).
    bool files_shared(const interpreter_context& context) const;

    boost::asio::io_context& ioc_;
    kernels::kernel_manager& kernels_;
    const interpreter_settings settings_;
    logger log_;
    kernels::culled_kernels culled_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<interpreter_context>> contexts_;
    paused_table paused_;  // mutex_
    std::atomic<bool> stopping_{false};
};

}  // namespace callisto::gateway::interpreter
