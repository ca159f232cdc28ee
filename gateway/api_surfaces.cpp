#include "gateway/api_surfaces.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

#include "gateway/mcp/context_tools.hpp"

namespace callisto::gateway {

namespace fs = std::filesystem;

namespace {

// The interpreter's settings as given, with the server's services and what follows from the
// sandbox, the state directory and the other options.
interpreter::interpreter_settings interpreter_settings_for(
    const server_config& config, audit::audit_log* audit, kernels::kernel_metrics& metrics,
    interpreter::context_record_store* records, interpreter::paused_record_store* paused) {
    interpreter::interpreter_settings s = config.interpreter;
    s.audit = audit;
    s.metrics = &metrics;
    s.context_records = records;
    s.paused_records = paused;
    s.egress_allow = config.egress_allow;
    // Sandboxed kernels already run in their session workdir, <workdir_root>/<kernel id>.
    if (config.sandbox) s.kernel_workdir_root = config.kernels.workdir_root;
    // Unsandboxed contexts get a directory of their own: under the state directory when there
    // is one (it outlives this process, as the contexts do), else in the runtime root.
    s.context_root = config.state_dir.empty() ? config.kernels.runtime_root / "contexts"
                                              : config.state_dir / "workdirs";
    // Snapshots outlive the process as the state directory does; without one (--sandbox=off,
    // --state-dir=off) they last as long as the runtime root.
    if (s.snapshot_dir.empty())
        s.snapshot_dir = config.state_dir.empty() ? config.kernels.runtime_root / "snapshots"
                                                  : config.state_dir / "snapshots";
    // Paused contexts' states stay with this server's records (never shared between replicas
    // as --snapshot-dir may be): in the state directory, which outlives a reboot.
    s.paused_snapshot_dir = config.state_dir.empty()
                                ? config.kernels.runtime_root / "paused-snapshots"
                                : config.state_dir / "paused-snapshots";
    // A request may ask for a smaller budget than --output-budget, never a larger one.
    s.request_limits.max_output_budget = s.text_budget_bytes;
    s.max_download_bytes = std::max(s.max_download_bytes, s.max_upload_bytes);
    s.culled_retention = config.culling.retention;
    return s;
}

mcp::tool_limits mcp_tool_limits(const interpreter::interpreter_settings& s) {
    mcp::tool_limits limits;
    limits.max_code_bytes = s.request_limits.max_code_bytes;
    // An agent's tool call keeps its own, shorter default (a model waits on it), within the
    // server's bounds.
    limits.max_timeout = std::min(limits.max_timeout, s.request_limits.max_timeout);
    if (s.request_limits.default_timeout.count() > 0)
        limits.default_timeout = std::min(limits.default_timeout, s.request_limits.default_timeout);
    limits.default_timeout = std::min(limits.default_timeout, limits.max_timeout);
    limits.max_output_budget = s.text_budget_bytes;
    limits.default_output_budget = std::min(limits.default_output_budget, s.text_budget_bytes);
    // A file travels base64 inside one JSON body: keep that body a sensible size; larger
    // files go through PUT /v1/contexts/{id}/files/{path}.
    limits.max_upload_bytes = std::min<std::size_t>(s.max_upload_bytes, 16u << 20);
    return limits;
}

std::vector<std::string> kernelspec_names(const launcher::kernelspec_catalog& catalog) {
    std::vector<std::string> names;
    for (const auto& spec : catalog.all()) names.push_back(spec.name);
    return names;
}

// E2B's sandboxes live within the interpreter's bounds: env_vars as /v1's env.
e2b::e2b_settings e2b_settings_for(const interpreter::interpreter_settings& s,
                                   const server_config& config,
                                   e2b::sandbox_record_store* records) {
    e2b::e2b_settings e;
    e.records = records;
    e.domain = config.e2b_domain;
    e.templates = config.e2b_templates;
    e.limits.env = s.request_limits.env;
    e.limits.max_timeout = s.request_limits.max_timeout;
    std::error_code ec;
    e.enter_program = fs::read_symlink("/proc/self/exe", ec).parent_path() / "callisto-enter";
    return e;
}

}  // namespace

api_surfaces::api_surfaces(boost::asio::io_context& ioc, const server_config& config,
                           kernel_runtime& runtime, const state_stores& state, const logger& log)
    : config_(config),
      log_(log),
      runtime_(runtime),
      state_(state),
      kernels_rest_(runtime_.kernels()),
      kernelspecs_rest_(runtime_.catalog(), runtime_.kernels().default_kernel_name()),
      contexts_(ioc, runtime_.kernels(),
                interpreter_settings_for(config_, state_.audit(), runtime_.metrics(),
                                         state_.context_records(), state_.paused_records()),
                log_.component("interpreter")),
      interpreter_rest_(contexts_),
      mcp_sessions_(
          [this](const user& owner, const std::string&) -> std::shared_ptr<mcp::tool_backend> {
              return std::make_shared<mcp::context_tools>(
                  contexts_, interpreter_rest_, owner,
                  std::min<std::size_t>(contexts_.settings().max_download_bytes, 16u << 20),
                  log_.component("mcp"));
          },
          config_.mcp, log_.component("mcp")),
      mcp_(mcp_sessions_, mcp_tool_limits(contexts_.settings()), CALLISTO_VERSION),
      e2b_(ioc, contexts_, kernelspec_names(runtime_.catalog()),
           e2b_settings_for(contexts_.settings(), config_, state_.sandbox_records()),
           log_.component("e2b")),
      // An hour of 10 s samples for the admin console's chart.
      activity_(std::chrono::seconds(10), 360),
      activity_sampler_(ioc, activity_, [this] { return sample_activity(); }),
      admin_rest_(runtime_.kernels(), state_.audit(), activity_,
                  {CALLISTO_VERSION, std::chrono::system_clock::now(), runtime_.sandboxed()},
                  network_source(), sandbox_source()) {}

api_surfaces::~api_surfaces() = default;

void api_surfaces::restore_contexts() {
    if (state_.context_records()) contexts_.restore(*state_.context_records());
    e2b_.restore();  // on the contexts back
    // After them: a context a crash left both live and paused is taken as paused.
    interpreter_rest_.start();
}

void api_surfaces::start(boost::asio::io_context& ioc) {
    e2b_.start();
    mcp_sessions_.start_expiry(ioc);
    activity_sampler_.start();
}

void api_surfaces::stop() {
    activity_sampler_.stop();
    e2b_.stop();
    interpreter_rest_.stop();
    contexts_.stop();
    mcp_sessions_.close_all();
}

admin::activity_sample api_surfaces::sample_activity() const {
    admin::activity_sample sample;
    sample.at = std::chrono::system_clock::now();
    for (const auto& k : runtime_.kernels().list()) {
        ++sample.kernels;
        if (k->activity().execution_state == "busy") ++sample.busy;
    }
    double executions = 0;
    runtime_.metrics().executions.for_each(
        [&](const auto&, const metrics::counter& c) { executions += c.value(); });
    sample.executions_total = static_cast<std::uint64_t>(executions);
    return sample;
}

admin::network_source api_surfaces::network_source() {
    if (!runtime_.egress_enabled()) return {};
    // The egress proxy is made in the constructor's body, before any request is served.
    return [this] {
        std::vector<admin::kernel_network> out;
        auto* egress = runtime_.egress();
        if (!egress) return out;
        for (auto& k : egress->activity())
            out.push_back({std::move(k.kernel_id), std::move(k.allow), k.counts.allowed,
                           k.counts.refused, k.counts.open, k.counts.bytes_up,
                           k.counts.bytes_down});
        return out;
    };
}

admin::sandbox_source api_surfaces::sandbox_source() {
    return [this] {
        std::vector<admin::e2b_sandbox> out;
        for (auto& [box, commands] : e2b_.all_sandboxes()) {
            admin::e2b_sandbox view{box.id,     box.owner.name, box.template_id,
                                    box.kernel, box.started_at, box.end_at,
                                    {},         commands};
            for (const auto& c : box.contexts) view.context_ids.push_back(c.id);
            out.push_back(std::move(view));
        }
        return out;
    };
}

}  // namespace callisto::gateway
