#include "gateway/admin/admin_api.hpp"

#include <algorithm>
#include <tuple>

#include "gateway/http/json_response.hpp"
#include "kernelproto/iso_time.hpp"

namespace callisto::gateway::admin {
namespace {

// An audit line as the console lists it: the names of the rest of this API (kernel_id,
// started, duration_seconds), not the log's terse ones; the code when the log keeps it.
nlohmann::json audit_entry_view(const nlohmann::json& line) {
    nlohmann::json v = {{"seq", line.value("seq", 0)},
                        {"started", line.value("time", "")},
                        {"user", line.value("user", "")},
                        {"api", line.value("api", "")},
                        {"kernel_id", line.value("kernel", "")},
                        {"context_id", line.contains("context") ? line["context"] : nullptr},
                        {"execution_id", line.value("execution", "")},
                        {"status", line.value("status", "")},
                        {"duration_seconds", line.value("duration_s", 0.0)},
                        {"output_bytes", line.value("output_bytes", 0)},
                        {"files_written", line.value("files_written", nlohmann::json::array())},
                        {"code_sha256", line.value("code_sha256", "")}};
    if (line.contains("code")) v["code"] = line["code"];
    return v;
}

// Every sandbox, oldest first: as many as the E2B facade holds, each a few fields.
nlohmann::json sandboxes_view(std::vector<e2b_sandbox> list) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
        return std::tie(a.started_at, a.id) < std::tie(b.started_at, b.id);
    });
    nlohmann::json out = nlohmann::json::array();
    for (const auto& box : list)
        out.push_back({{"id", box.id},
                       {"owner", box.owner},
                       {"template", box.template_id},
                       {"kernelspec", box.kernelspec},
                       {"started_at", kernelproto::format_iso_time(box.started_at)},
                       {"end_at", kernelproto::format_iso_time(box.end_at)},
                       {"contexts", box.context_ids},
                       {"commands", box.commands}});
    return out;
}

}  // namespace

admin_api::admin_api(const kernels::kernel_manager& kernels, const audit::audit_log* audit,
                     const activity_history& history, server_facts facts, network_source network,
                     sandbox_source sandboxes)
    : kernels_(kernels),
      audit_(audit),
      history_(history),
      facts_(std::move(facts)),
      network_(std::move(network)),
      sandboxes_(std::move(sandboxes)) {}

http_response admin_api::whoami(const user& who) const {
    return json_response(http::status::ok, {{"user", who.name}, {"admin", who.admin}});
}

http_response admin_api::overview() const {
    nlohmann::json pool = nlohmann::json::array();
    for (const auto& [kernelspec, level] : kernels_.pool_levels())
        pool.push_back(
            {{"kernelspec", kernelspec}, {"ready", level.first}, {"target", level.second}});
    nlohmann::json culled = nlohmann::json::array();
    for (const auto& [id, c] : kernels_.recently_culled(latest_shown))
        culled.push_back({{"id", id},
                          {"name", c.kernelspec},
                          {"owner", c.owner},
                          {"reason", c.reason},
                          {"culled_at", kernelproto::format_iso_time(c.culled_at)}});
    nlohmann::json latest = nlohmann::json::array();
    if (audit_)
        for (const auto& line : audit_->latest(latest_shown))
            latest.push_back(audit_entry_view(line));
    nlohmann::json audit = {{"enabled", audit_ != nullptr}, {"latest", std::move(latest)}};
    // Only the networked kernels, by id: the console shows "none" for the rest. As many as
    // there are networked kernels, each a few counters.
    nlohmann::json networked = nlohmann::json::array();
    if (network_) {
        auto kernels = network_();
        std::sort(kernels.begin(), kernels.end(),
                  [](const auto& a, const auto& b) { return a.kernel_id < b.kernel_id; });
        for (const auto& k : kernels)
            networked.push_back({{"kernel_id", k.kernel_id},
                                 {"allow", k.allow},
                                 {"connections",
                                  {{"allowed", k.connections_allowed},
                                   {"refused", k.connections_refused},
                                   {"open", k.connections_open}}},
                                 {"bytes", {{"up", k.bytes_up}, {"down", k.bytes_down}}}});
    }
    nlohmann::json network = {{"enabled", static_cast<bool>(network_)},
                              {"kernels", std::move(networked)}};
    nlohmann::json sandboxes = sandboxes_ ? sandboxes_view(sandboxes_()) : nlohmann::json::array();
    return json_response(http::status::ok,
                         {{"server",
                           {{"version", facts_.version},
                            {"started_at", kernelproto::format_iso_time(facts_.started_at)},
                            {"sandbox", facts_.sandbox}}},
                          {"pool", std::move(pool)},
                          {"culled", std::move(culled)},
                          {"history", history_.to_json()},
                          {"audit", std::move(audit)},
                          {"network", std::move(network)},
                          {"sandboxes", std::move(sandboxes)}});
}

}  // namespace callisto::gateway::admin
