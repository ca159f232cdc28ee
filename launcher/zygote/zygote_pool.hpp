#pragma once
// One zygote per kernelspec that can have one: a `python -m module` kernelspec run by the
// interpreter the zygote embeds, or by a venv made from it, not opted out with
// "metadata": {"callisto": {"zygote": false}}. A venv's zygote starts as the venv's interpreter,
// so Python reads its pyvenv.cfg: sys.prefix and site-packages are the venv's, and
// include-system-site-packages decides whether the system's are seen too.
// Its preloads are metadata.callisto.preload, or the data stack for a Python kernelspec.
//
// A fork is tried first; whenever no zygote can fork (not eligible, still importing, dead
// and waiting out its restart backoff, or its fork failed) the caller starts the kernel the
// usual way, so kernels always start. A zygote that died is restarted by the pool's own thread
// after a backoff (1 s, doubling to 60 s, back to 1 s after a minute alive), with the reason
// logged, whether or not kernels are being asked for.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/logger.hpp"
#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/zygote/zygote_client.hpp"

namespace callisto::launcher {

class zygote_pool {
public:
    using exit_handler = process_supervisor::exit_handler;
    using clock = std::chrono::steady_clock;

    zygote_pool(process_supervisor& supervisor, zygote_settings settings, logger log);
    ~zygote_pool();  // stops every zygote (and so every kernel it forked)

    // The interpreter a zygote embeds, as built (CALLISTO_ZYGOTE_PYTHON).
    static std::filesystem::path built_python();

    // "" when `spec` can be forked by a zygote embedding `python`, else why not: another
    // interpreter (a conda prefix, another Python version) has its own standard library and
    // extension modules, which the embedded one cannot load.
    [[nodiscard]] static std::string why_not_eligible(const kernelspec& spec,
                                                      const std::filesystem::path& python);
    // The program the zygote for `spec` starts as (Python's program name, from which it finds
    // its prefix): the venv's interpreter for a venv, else `python`.
    static std::filesystem::path program_for(const kernelspec& spec,
                                             const std::filesystem::path& python);
    // metadata.callisto.preload, or numpy, pandas and matplotlib for Python kernelspecs.
    static std::vector<std::string> preloads(const kernelspec& spec);

    // Starts a zygote for each eligible kernelspec now (importing takes a second or two), and
    // logs why the others start the usual way.
    void start(const std::vector<kernelspec>& specs);

    // A fork of `what` (what.zygote set) by its kernelspec's zygote; nullopt when none could
    // fork it now, and the caller should start it the usual way.
    std::optional<pid_t> try_fork(const spawn_description& what, exit_handler on_exit);

    // False when `pid` is not a kernel a zygote forked (then it is the supervisor's).
    bool signal(pid_t pid, int sig);
    bool terminate(pid_t pid, std::chrono::milliseconds grace);
    bool forked(pid_t pid) const;

private:
    struct entry {
        kernelspec spec;
        std::filesystem::path program;  // program_for(spec)
        std::shared_ptr<zygote_client> client;
        clock::time_point started{};
        std::optional<clock::time_point> restart_at;  // set once the zygote has gone
        std::chrono::seconds backoff{1};
    };

    void launch(entry& e);  // under mutex_
    void on_gone(const std::string& name, const std::string& why);
    void restart_when_due();  // the restarter thread
    std::vector<std::shared_ptr<zygote_client>> clients() const;

    process_supervisor& supervisor_;
    zygote_settings settings_;
    logger log_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::map<std::string, entry> entries_;  // by kernelspec name, guarded by mutex_
    bool stopping_ = false;                 // guarded by mutex_
    std::thread restarter_;
};

}  // namespace callisto::launcher
