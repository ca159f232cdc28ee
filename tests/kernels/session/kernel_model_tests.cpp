#include "gateway/kernels/session/kernel_model.hpp"

#include <unistd.h>

#include <doctest/doctest.h>

using namespace callisto::gateway::kernels;

TEST_CASE("a user's kernel model shows nothing of the process, its owner or what holds it") {
    kernel_model m;
    m.assign_owner("ana");
    m.set_process(4242, true);
    m.hold(kernel_holder::context, "c-1");
    auto j = m.to_json("k-1", "python3");
    CHECK(j["id"] == "k-1");
    CHECK(j["name"] == "python3");
    CHECK_FALSE(j.contains("callisto"));
}

TEST_CASE("an admin's kernel model names owner, start, executions and what holds the kernel") {
    kernel_model m;
    m.assign_owner("ana");
    m.set_process(4242, false);
    auto client = m.to_json("k-1", "python3", kernel_process_view::shown)["callisto"];
    CHECK(client["owner"] == "ana");
    CHECK(client["launch"] == "exec");
    CHECK(client["pid"] == 4242);
    CHECK(client["held_by"] == "client");  // a Jupyter API kernel, until something takes it
    CHECK_FALSE(client.contains("context_id"));
    CHECK(client["executions"] == 0);
    CHECK(client["started"].get<std::string>().ends_with("Z"));

    m.hold(kernel_holder::mcp, "c-9");
    m.count_execution();
    m.count_execution();
    auto held = m.to_json("k-1", "python3", kernel_process_view::shown)["callisto"];
    CHECK(held["held_by"] == "mcp");
    CHECK(held["context_id"] == "c-9");
    CHECK(held["executions"] == 2);

    m.hold(kernel_holder::keep);  // the context went; the reset kernel waits for its owner
    auto kept = m.to_json("k-1", "python3", kernel_process_view::shown)["callisto"];
    CHECK(kept["held_by"] == "keep");
    CHECK_FALSE(kept.contains("context_id"));
    CHECK(kept["started"] == client["started"]);
}

TEST_CASE("an admin sees no process part while no process runs") {
    kernel_model m;
    m.assign_owner("ana");
    CHECK_FALSE(m.to_json("k-1", "python3", kernel_process_view::shown).contains("callisto"));
}

TEST_CASE("an admin's list shows each kernel's memory, not null until the kernel is fetched") {
    // This process stands in for a kernel: its PSS is readable, as a kernel's is to the gateway.
    kernel_model m;
    m.set_process(::getpid(), false);
    auto listed = m.to_json("k-1", "python3", kernel_process_view::shown)["callisto"];
    REQUIRE(listed["pss_bytes"].is_number_unsigned());
    CHECK(listed["pss_bytes"].get<std::uint64_t>() > 0);
    auto one = m.to_json("k-1", "python3", kernel_process_view::shown_with_fresh_memory);
    CHECK(one["callisto"]["pss_bytes"].get<std::uint64_t>() > 0);
    // A new process behind the kernel is read anew, in the list too.
    m.set_process(::getpid(), true);
    CHECK(m.to_json("k-1", "python3", kernel_process_view::shown)["callisto"]["pss_bytes"] > 0);
}
