#include "launcher/zygote/zygote_pool.hpp"

#include <cstdlib>
#include <system_error>

#include "launcher/kernelspec/interpreter_environment.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"

namespace callisto::launcher {

namespace {

constexpr std::chrono::seconds max_backoff{60};
constexpr std::chrono::seconds healthy_after{60};

// Where the kernel's argv[0] is looked up: the gateway's PATH, as an unsandboxed kernel's, and
// for the programs a zygote can embed (under /usr), the sandbox's finds the same.
std::string search_path() {
    const char* path = std::getenv("PATH");
    return path ? path : sandbox_search_path;
}

}  // namespace

zygote_pool::zygote_pool(process_supervisor& supervisor, zygote_settings settings, logger log)
    : supervisor_(supervisor), settings_(std::move(settings)), log_(std::move(log)) {
    restarter_ = std::thread([this] { restart_when_due(); });
}

zygote_pool::~zygote_pool() {
    std::map<std::string, entry> entries;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        entries.swap(entries_);
    }
    changed_.notify_all();
    restarter_.join();
    entries.clear();  // outside the lock: a client's thread may be in on_gone
}

std::filesystem::path zygote_pool::built_python() { return CALLISTO_ZYGOTE_PYTHON; }

std::string zygote_pool::why_not_eligible(const kernelspec& spec,
                                          const std::filesystem::path& python) {
    const auto callisto = spec.metadata.find("callisto");
    if (callisto != spec.metadata.end() && callisto->is_object()) {
        const auto flag = callisto->find("zygote");
        if (flag != callisto->end() && flag->is_boolean() && !flag->get<bool>())
            return "its kernelspec opts out (metadata.callisto.zygote: false)";
    }
    if (spec.argv.size() < 3 || spec.argv[1] != "-m")
        return "its command is not `python -m module`";
    std::error_code ec;
    const auto ours = std::filesystem::canonical(python, ec);
    if (ec) return "the zygote's Python " + python.string() + " is not there";
    interpreter_environment env;
    try {
        env = find_interpreter_environment(spec.argv[0], search_path());
    } catch (const std::exception& e) {
        return std::string("its interpreter: ") + e.what();
    }
    // A venv runs on the Python it was made from: over ours, a zygote started as the venv's
    // interpreter has the venv's sys.prefix and site-packages (program_for).
    if (env.base_interpreter != ours)
        return "it runs " + spec.argv[0] + " (" + env.base_interpreter.string() +
               "), and the zygote embeds " + python.string() + " (" + ours.string() + ")";
    return {};
}

std::filesystem::path zygote_pool::program_for(const kernelspec& spec,
                                               const std::filesystem::path& python) {
    try {
        const auto env = find_interpreter_environment(spec.argv.at(0), search_path());
        if (env.venv) return env.interpreter;
    } catch (const std::exception&) {
    }
    return python;
}

std::vector<std::string> zygote_pool::preloads(const kernelspec& spec) {
    const auto callisto = spec.metadata.find("callisto");
    if (callisto != spec.metadata.end() && callisto->is_object()) {
        const auto list = callisto->find("preload");
        if (list != callisto->end() && list->is_array()) {
            std::vector<std::string> out;
            for (const auto& item : *list)
                if (item.is_string()) out.push_back(item.get<std::string>());
            return out;
        }
    }
    if (spec.language == "python") return {"numpy", "pandas", "matplotlib", "matplotlib.pyplot"};
    return {};
}

void zygote_pool::start(const std::vector<kernelspec>& specs) {
    std::lock_guard lock(mutex_);
    for (const auto& spec : specs) {
        if (auto why = why_not_eligible(spec, settings_.python); !why.empty()) {
            log_.info("kernelspec " + spec.name + " starts without a zygote: " + why);
            continue;
        }
        auto& e = entries_[spec.name];
        e.spec = spec;
        e.program = program_for(spec, settings_.python);
        if (e.program != settings_.python)
            log_.info("kernelspec " + spec.name + " runs in the venv of " + e.program.string() +
                      ": its zygote starts as that interpreter");
        launch(e);
    }
}

void zygote_pool::launch(entry& e) {
    e.started = clock::now();
    try {
        const std::string name = e.spec.name;
        auto settings = settings_;
        settings.python = e.program;
        e.client = std::make_shared<zygote_client>(
            supervisor_, settings, e.spec, preloads(e.spec), log_,
            [this, name](const std::string& why) { on_gone(name, why); });
    } catch (const std::exception& ex) {
        e.client.reset();
        e.restart_at = clock::now() + e.backoff;
        e.backoff = std::min(e.backoff * 2, max_backoff);
        log_.warn("zygote for " + e.spec.name + " did not start: " + ex.what());
        changed_.notify_all();
    }
}

void zygote_pool::on_gone(const std::string& name, const std::string& why) {
    {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(name);
        if (it == entries_.end()) return;  // shutting down
        auto& e = it->second;
        if (clock::now() - e.started > healthy_after) e.backoff = std::chrono::seconds(1);
        e.restart_at = clock::now() + e.backoff;
        log_.warn("zygote for " + name + " exited (" + why + "); its kernels start the usual " +
                  "way until it is restarted in " + std::to_string(e.backoff.count()) + " s");
        e.backoff = std::min(e.backoff * 2, max_backoff);
    }
    changed_.notify_all();
}

void zygote_pool::restart_when_due() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        std::optional<clock::time_point> next;
        std::vector<std::shared_ptr<zygote_client>> dead;  // destroyed without the lock
        for (auto& [name, e] : entries_) {
            if (!e.restart_at) continue;
            if (*e.restart_at <= clock::now()) {
                e.restart_at.reset();
                dead.push_back(std::move(e.client));
                launch(e);  // on failure, sets restart_at again
            }
            if (e.restart_at && (!next || *e.restart_at < *next)) next = e.restart_at;
        }
        if (!dead.empty()) {
            lock.unlock();
            dead.clear();  // joins each reader, which has finished
            lock.lock();
            continue;
        }
        if (next)
            changed_.wait_until(lock, *next);
        else
            changed_.wait(lock);
    }
}

std::optional<pid_t> zygote_pool::try_fork(const spawn_description& what, exit_handler on_exit) {
    if (!what.zygote) return std::nullopt;
    std::shared_ptr<zygote_client> client;
    {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(what.zygote->kernelspec);
        if (it == entries_.end()) return std::nullopt;
        // Importing, or gone and not yet restarted: this kernel starts the usual way.
        if (!it->second.client || !it->second.client->ready()) return std::nullopt;
        client = it->second.client;
    }
    try {
        return client->fork(what, std::move(on_exit));
    } catch (const std::exception& ex) {
        log_.warn("zygote for " + what.zygote->kernelspec + " could not fork a kernel (" +
                  ex.what() + "); starting it the usual way");
        return std::nullopt;
    }
}

std::vector<std::shared_ptr<zygote_client>> zygote_pool::clients() const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<zygote_client>> out;
    for (const auto& [name, e] : entries_)
        if (e.client) out.push_back(e.client);
    return out;
}

bool zygote_pool::signal(pid_t pid, int sig) {
    for (const auto& client : clients())
        if (client->signal(pid, sig)) return true;
    return false;
}

bool zygote_pool::terminate(pid_t pid, std::chrono::milliseconds grace) {
    for (const auto& client : clients())
        if (client->terminate(pid, grace)) return true;
    return false;
}

bool zygote_pool::forked(pid_t pid) const {
    for (const auto& client : clients())
        if (client->owns(pid)) return true;
    return false;
}

}  // namespace callisto::launcher
