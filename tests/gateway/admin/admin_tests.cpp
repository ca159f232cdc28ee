#include "gateway/admin/activity_history.hpp"

#include <doctest/doctest.h>

#include "gateway/admin/admin_api.hpp"
#include "kernelproto/iso_time.hpp"
#include "launcher/kernelspec/kernelspec_catalog.hpp"
#include "tests/kernels/kernel_fakes.hpp"

using namespace callisto::gateway::admin;
using namespace std::chrono_literals;

TEST_CASE("activity history keeps the latest samples, oldest first, with its interval") {
    activity_history history(10s, 3);
    auto empty = history.to_json();
    CHECK(empty["interval_seconds"] == 10);
    CHECK(empty["samples"].empty());
    const auto t0 = std::chrono::system_clock::time_point{} + std::chrono::hours(490000);
    for (std::uint64_t i = 0; i < 5; ++i)
        history.add({t0 + i * 10s, static_cast<std::size_t>(i), i / 2, 100 * i});
    auto samples = history.to_json()["samples"];
    REQUIRE(samples.size() == 3);  // the first two gave way
    CHECK(samples[0]["kernels"] == 2);
    CHECK(samples[0]["busy"] == 1);
    CHECK(samples[0]["executions_total"] == 200);
    CHECK(samples[2]["kernels"] == 4);
    CHECK(samples[2]["executions_total"] == 400);
    CHECK(samples[0]["t"] < samples[2]["t"]);
}

TEST_CASE("activity history with no room keeps nothing") {
    activity_history history(10s, 0);
    history.add({});
    CHECK(history.to_json()["samples"].empty());
}

namespace {

// The overview of a server with no kernels, the egress and sandbox sources given.
nlohmann::json overview_with(network_source network, sandbox_source sandboxes = {}) {
    callisto::gateway::kernels::test::fake_world w;
    callisto::launcher::kernelspec_catalog catalog({w.root / "kernels"});
    callisto::gateway::kernels::kernel_manager kernels(w.env, catalog);
    activity_history history(std::chrono::seconds(10), 3);
    admin_api api(kernels, nullptr, history, {"test", std::chrono::system_clock::now(), true},
                  std::move(network), std::move(sandboxes));
    const auto res = api.overview();
    REQUIRE(res.result() == boost::beast::http::status::ok);
    return nlohmann::json::parse(res.body());
}

}  // namespace

TEST_CASE("the admin overview lists each networked kernel's rules and egress activity") {
    auto j = overview_with([] {
        kernel_network quiet;
        quiet.kernel_id = "k-2";
        quiet.allow = {"pypi.org"};
        kernel_network busy{"k-1", {"127.0.0.2:8080", "*.example.org"}, 3, 2, 1, 1500, 70000};
        return std::vector<kernel_network>{quiet, busy};
    });
    const auto& network = j["network"];
    CHECK(network["enabled"] == true);
    REQUIRE(network["kernels"].size() == 2);
    const auto& first = network["kernels"][0];  // by id
    CHECK(first["kernel_id"] == "k-1");
    CHECK(first["allow"] == nlohmann::json::array({"127.0.0.2:8080", "*.example.org"}));
    CHECK(first["connections"] == nlohmann::json({{"allowed", 3}, {"refused", 2}, {"open", 1}}));
    CHECK(first["bytes"] == nlohmann::json({{"up", 1500}, {"down", 70000}}));
    const auto& second = network["kernels"][1];
    CHECK(second["kernel_id"] == "k-2");
    CHECK(second["allow"] == nlohmann::json::array({"pypi.org"}));
    CHECK(second["connections"] == nlohmann::json({{"allowed", 0}, {"refused", 0}, {"open", 0}}));
    CHECK(second["bytes"] == nlohmann::json({{"up", 0}, {"down", 0}}));
    // The rest of the overview is unchanged.
    for (const char* key : {"server", "pool", "culled", "history", "audit"}) CHECK(j.contains(key));
}

TEST_CASE("the admin overview without egress says so and lists no kernel's network") {
    auto off = overview_with({});
    CHECK(off["network"] ==
          nlohmann::json({{"enabled", false}, {"kernels", nlohmann::json::array()}}));
    auto none = overview_with([] { return std::vector<kernel_network>{}; });
    CHECK(none["network"] ==
          nlohmann::json({{"enabled", true}, {"kernels", nlohmann::json::array()}}));
}

TEST_CASE("the admin overview lists the E2B sandboxes, oldest first, with their contexts") {
    const auto t0 = std::chrono::system_clock::time_point{} + std::chrono::hours(490000);
    auto j = overview_with({}, [t0] {
        e2b_sandbox later{
            "bbbbbbbbbbbbbbbbbbbb", "bob", "data", "ir", t0 + 60s, t0 + 960s, {"ctx-3"}, 0};
        e2b_sandbox first{
            "aaaaaaaaaaaaaaaaaaaa", "ana", "code-interpreter-v1", "python3", t0, t0 + 300s,
            {"ctx-1", "ctx-2"},     2};
        return std::vector<e2b_sandbox>{later, first};
    });
    REQUIRE(j["sandboxes"].size() == 2);
    const auto& a = j["sandboxes"][0];
    CHECK(a["id"] == "aaaaaaaaaaaaaaaaaaaa");
    CHECK(a["owner"] == "ana");
    CHECK(a["template"] == "code-interpreter-v1");
    CHECK(a["kernelspec"] == "python3");
    CHECK(a["started_at"] == callisto::kernelproto::format_iso_time(t0));
    CHECK(a["end_at"] == callisto::kernelproto::format_iso_time(t0 + 300s));
    CHECK(a["contexts"] == nlohmann::json::array({"ctx-1", "ctx-2"}));
    CHECK(a["commands"] == 2);
    const auto& b = j["sandboxes"][1];
    CHECK(b["id"] == "bbbbbbbbbbbbbbbbbbbb");
    CHECK(b["template"] == "data");
    CHECK(b["kernelspec"] == "ir");
    CHECK(b["commands"] == 0);
}

TEST_CASE("the admin overview without sandboxes lists none") {
    CHECK(overview_with({})["sandboxes"] == nlohmann::json::array());
    CHECK(overview_with({}, [] { return std::vector<e2b_sandbox>{}; })["sandboxes"] ==
          nlohmann::json::array());
}
