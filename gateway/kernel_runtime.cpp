#include "gateway/kernel_runtime.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gateway/e2b/sandbox_templates.hpp"
#include "gateway/egress/address_classifier.hpp"
#include "gateway/host_defaults.hpp"
#include "gateway/kernel_adoption.hpp"
#include "launcher/kernelspec/kernelspec_check.hpp"
#include "launcher/sandbox/cgroup_move_timer.hpp"
#include "launcher/sandbox/sandbox_probe.hpp"

namespace callisto::gateway {

namespace fs = std::filesystem;

namespace {

// The zygotes fork kernels from callisto-zygote, beside this binary unless configured.
std::unique_ptr<launcher::zygote_pool> make_zygote_pool(const server_config& config,
                                                        launcher::process_supervisor& supervisor,
                                                        logger log) {
    if (!config.zygote) return nullptr;
    auto program = config.zygote_program;
    if (program.empty()) {
        std::error_code ec;
        program = fs::read_symlink("/proc/self/exe", ec).parent_path() / "callisto-zygote";
    }
    if (::access(program.c_str(), X_OK) != 0) {
        log.warn("no zygote program at " + program.string() +
                 "; every kernel starts its own interpreter");
        return nullptr;
    }
    launcher::zygote_settings settings{program, launcher::zygote_pool::built_python(),
                                       config.kernels.runtime_root};
    return std::make_unique<launcher::zygote_pool>(supervisor, std::move(settings), std::move(log));
}

// A --kernel-dir that does not exist, or a --default-kernel or --pool no directory provides,
// is a typo: refused at start, naming what exists, instead of failing at the first kernel or
// leaving a pool empty.
void check_kernel_options(const server_config& config,
                          const launcher::kernelspec_catalog& catalog) {
    for (const auto& dir : config.kernel_dirs)
        if (!fs::is_directory(dir))
            throw std::runtime_error("--kernel-dir=" + dir.string() + ": no such directory");
    auto unknown = [&catalog](const std::string& option, const std::string& name) {
        if (auto why = catalog.refusal(name))
            return std::runtime_error(option + ": kernelspec " + name + " is not offered: " + *why);
        std::string names;
        for (const auto& spec : catalog.all()) names += (names.empty() ? "" : ", ") + spec.name;
        return std::runtime_error(
            option + ": no such kernelspec (found: " + (names.empty() ? "none" : names) +
            "; --kernel-dir adds a directory of kernelspecs)");
    };
    if (!config.kernels.default_kernel.empty() && !catalog.find(config.kernels.default_kernel))
        throw unknown("--default-kernel=" + config.kernels.default_kernel,
                      config.kernels.default_kernel);
    for (const auto& [name, size] : config.pool_sizes)
        if (!catalog.find(name)) throw unknown("--pool=" + name + ":" + std::to_string(size), name);
    for (const auto& t : config.e2b_templates)
        if (!catalog.find(t.kernelspec))
            throw unknown("--e2b-template=" + e2b::format_sandbox_template(t), t.kernelspec);
}

// A kernelspec is offered only when its interpreter runs where its kernels will
// (launcher/kernelspec/kernelspec_check.hpp); an environment may show none of the gateway's own
// files.
launcher::kernelspec_catalog::check_fn kernelspec_check_for(const server_config& config,
                                                            const launcher::sandbox* box) {
    launcher::kernelspec_check_settings s;
    s.box = box;
    s.who = {config.sandbox_uid_first, config.sandbox_uid_first};
    for (const auto& path :
         {config.kernels.workdir_root, config.kernels.runtime_root, config.state_dir,
          config.users_file, config.audit.file, config.audit.key_file, config.certfile,
          config.keyfile, config.client_ca, config.interpreter.snapshot_dir})
        if (!path.empty()) s.private_paths.push_back(path);
    return [s](const launcher::kernelspec& spec) { return launcher::kernelspec_problem(spec, s); };
}

// Every sandboxed kernel start waits for one move into a cgroup: the log says how long that
// takes here, and how to shorten it when it waits for an RCU grace period.
void report_cgroup_move_time(const launcher::cgroup_layout& cgroups, const std::string& tag,
                             const logger& log) {
    if (cgroups.version == launcher::cgroup_version::none) return;
    const auto timing = launcher::time_cgroup_move(
        cgroups, (tag.empty() ? "pid" + std::to_string(::getpid()) : tag) + "-move-timer");
    if (!timing.error.empty()) {
        log.warn("could not time a move into a cgroup: " + timing.error);
        return;
    }
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.2f", timing.median_ms);
    const std::string figure =
        std::string("moving a process into its cgroups takes ") + ms + " ms here";
    if (timing.median_ms <= launcher::slow_cgroup_move_ms) {
        log.info(figure);
        return;
    }
    log.warn(figure +
             ", and every kernel start waits for one: the host does not favour dynamic cgroup "
             "changes. Mounting cgroup2 with favordynmods (mount -o remount,favordynmods on its "
             "mount) or a kernel built with CONFIG_CGROUP_FAVOR_DYNMODS makes it about 0.5 ms; "
             "see docs/operations.md, \"Host tuning\"");
}

// Appended, once, to every refusal for want of a sandbox.
constexpr const char* sandbox_off_note =
    "; --sandbox=off starts without the sandbox, for development only: kernel code then runs "
    "as this user, with its files and network";

// Probes the host; throws with the probe's explanation when no safe mode exists.
std::unique_ptr<launcher::sandbox> make_sandbox(const server_config& config,
                                                const launcher::instance_lock* lock,
                                                const logger& log) {
    if (!config.sandbox) {
        log.warn("**********************************************************************");
        log.warn("SANDBOX OFF (--sandbox=off): kernel code runs as this user with full");
        log.warn("network, file and process access. For development only.");
        log.warn("**********************************************************************");
        return nullptr;
    }
    auto probe = launcher::sandbox_probe::run(config.bwrap, config.sandbox_uid_first);
    if (!probe.usable()) throw std::runtime_error(probe.describe() + sandbox_off_note);
    // The runtime root itself is made searchable at start (prepare_runtime_root); what lies
    // above it, and the workdir root, are the operator's.
    for (const auto& [dir, option] :
         {std::pair{config.kernels.workdir_root, "--workdir-root"},
          std::pair{config.kernels.runtime_root.parent_path(), "--runtime-dir's parent"}})
        if (auto why = launcher::sandbox_probe::unreachable_by_sandbox(dir, option); !why.empty())
            throw std::runtime_error(why);
    log.info(probe.describe());
    log.info("sandbox limits per kernel session (an E2B sandbox's contexts share one): " +
             config.kernels.limits.describe() + "; uids " +
             std::to_string(config.sandbox_uid_first) + "-" +
             std::to_string(config.sandbox_uid_first + config.sandbox_uid_count - 1) +
             "; workdirs under " + config.kernels.workdir_root.string());
    report_cgroup_move_time(probe.cgroups, lock ? lock->tag() : "", log);
    return std::make_unique<launcher::sandbox>(probe.bwrap, probe.cgroups, lock ? lock->tag() : "");
}

// --pool-size applies to the default kernelspec; --pool=NAME:N entries win over it. Each E2B
// template's pool adds its ready kernels to its kernelspec's.
std::map<std::string, std::size_t> pool_sizes(const server_config& config,
                                              const launcher::kernelspec_catalog& catalog) {
    auto sizes = config.pool_sizes;
    const std::string name = config.kernels.default_kernel.empty() ? catalog.default_name()
                                                                   : config.kernels.default_kernel;
    if (!name.empty() && !sizes.count(name)) sizes[name] = config.default_pool_size;
    for (const auto& t : config.e2b_templates)
        if (t.pool) sizes[t.kernelspec] += t.pool;
    return sizes;
}

// The kernels' settings as given, with what follows from the sandbox.
kernels::kernel_settings kernel_settings_for(const server_config& config) {
    kernels::kernel_settings s = config.kernels;
    s.ask_before_removing = !config.sandbox;
    return s;
}

}  // namespace

server_config kernel_runtime::checked_before_start(server_config config) {
    if (!config.sandbox) return config;
    if (auto problem = launcher::sandbox_probe::privilege_problem(::geteuid()); !problem.empty())
        throw std::runtime_error(problem + sandbox_off_note);
    return config;
}

kernel_runtime::kernel_runtime(boost::asio::io_context& ioc, const server_config& config,
                               metrics::registry& metrics, instance_directories& directories,
                               const state_stores& state, const logger& log)
    : config_(config),
      log_(log),
      metrics_(metrics),
      directories_(directories),
      state_(state),
      ioc_(ioc),
      host_load_(
          host_load_thresholds{
              .cpu_pressure_percent = static_cast<double>(config.shed_cpu_pressure),
              .run_queue_per_cpu = static_cast<double>(config.shed_run_queue),
              .lag = std::chrono::milliseconds(config.shed_lag_ms)},
          config.shed_load),
      kernel_metrics_(metrics),
      reactor_(log.component("reactor")),
      supervisor_(log.component("supervisor")),
      zygotes_(make_zygote_pool(config, supervisor_, log.component("zygote"))),
      kernel_links_(reactor_),
      kernel_processes_(supervisor_, zygotes_.get()),
      sandbox_(make_sandbox(config, directories.workdir_lock(), log.component("sandbox"))),
      catalog_(kernel_search_path(config), log.component("kernelspecs"),
               kernelspec_check_for(config, sandbox_.get())),
      sandbox_uids_(sandbox_ ? std::make_unique<launcher::sandbox_uid_pool>(
                                   config.sandbox_uid_first, config.sandbox_uid_count)
                             : nullptr),
      kernel_env_{ioc,
                  kernel_links_,
                  kernel_processes_,
                  kernel_metrics_,
                  kernel_settings_for(config),
                  log.component("kernel"),
                  sandbox_.get(),
                  sandbox_uids_.get(),
                  state.kernel_records(),
                  state.websocket_audit(),
                  &host_load_},
      kernels_(kernel_env_, catalog_, config.culling, pool_sizes(config, catalog_),
               config.max_kernels, config.reuse),
      trimmer_(ioc, std::chrono::seconds(10)),
      load_sampler_(
          ioc, host_load_, metrics, [this] { return kernels_.list().size(); },
          log.component("load")) {
    check_kernel_options(config_, catalog_);
    for (const auto& spec : catalog_.all()) kernel_metrics_.known_kernelspec(spec.name);
}

kernel_runtime::~kernel_runtime() = default;

bool kernel_runtime::egress_enabled() const { return sandbox_ && !config_.egress_allow.empty(); }

void kernel_runtime::start_egress(const boost::asio::ip::tcp::endpoint& gateway) {
    if (!egress_enabled()) return;
    kernel_egress_settings es;
    es.proxy.max_connections = config_.egress_connections;
    es.proxy.bytes_per_second = config_.egress_bytes_per_second;
    const auto text = gateway.address().to_string();
    auto address = gateway.address().is_v4() ? egress::parse_ipv4(text) : egress::parse_ipv6(text);
    if (address) es.own_endpoints.emplace_back(*address, gateway.port());
    egress_ = std::make_unique<kernel_egress>(ioc_.get_executor(), std::move(es), state_.audit(),
                                              metrics_, log_.component("egress"));
    kernel_env_.egress = egress_.get();
    log_.info("egress: kernels may ask for destinations within --egress-allow (" +
              std::to_string(config_.egress_allow.size()) + " rules)");
}

void kernel_runtime::take_over_host() {
    std::optional<kernel_adoption> adoption;
    if (state_.kernel_records())
        adoption.emplace(*state_.kernel_records(), log_.component("adoption"));
    directories_.take_over(sandbox_.get(), adoption ? &*adoption : nullptr);
    if (catalog_.all().empty())
        log_.warn("no kernelspecs found; install python3-ipykernel or pass --kernel-dir");
    for (const auto& spec : catalog_.all())
        log_.info("kernelspec " + spec.name + " from " + spec.resource_dir.string());
    // After the runtime root exists: the zygotes' scratch directories go there.
    if (zygotes_) zygotes_->start(catalog_.all());
    // Egress only with the sandbox: without it the ceiling is empty for adopted kernels too.
    if (adoption)
        adoption->adopt_into(kernels_, sandbox_uids_.get(),
                             egress_ ? config_.egress_allow : std::vector<std::string>{});
}

void kernel_runtime::start() {
    kernels_.start();
    trimmer_.start();
    load_sampler_.start();
}

void kernel_runtime::shut_down(std::function<void()> done) {
    trimmer_.stop();
    load_sampler_.stop();
    if (egress_) egress_->stop();
    kernels_.shutdown_all(std::move(done));
}

}  // namespace callisto::gateway
