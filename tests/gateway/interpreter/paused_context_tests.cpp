// Paused contexts (issue 37): the record a gateway writes of each (--state-dir), its bad forms,
// how the store reads records back (dropping what it cannot trust, never failing), and the
// state machine a paused context goes through as it resumes.

#include "gateway/interpreter/paused_context.hpp"

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "kernelproto/iso_time.hpp"
#include "tests/support/temp_dir.hpp"

using namespace callisto::gateway::interpreter;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string context_id = "0f1e2d3c-4b5a-4968-8776-655443322110";
const std::string other_id = "22222222-2222-4222-8222-222222222222";
const std::string snapshot_id = "5a5a5a5a-1111-4222-8333-444444444444";

paused_record sample_record(const std::string& id = context_id) {
    paused_record r;
    r.id = id;
    r.owner = "ana";
    r.kernel = "python3";
    r.network_allow = {"pypi.org:443"};
    r.policy = callisto::gateway::kernels::kernel_policy::fresh;
    r.snapshot_id = snapshot_id;
    r.created_at = "2026-11-25T10:00:00.000001Z";
    r.paused_at = "2026-11-25T11:00:00.000001Z";
    return r;
}

bool always(const paused_record&) { return true; }

}  // namespace

TEST_CASE("a paused context's record comes back as it was written") {
    const auto r = sample_record();
    const auto back = paused_record::from_json(json::parse(r.to_json().dump()));
    CHECK(back.id == r.id);
    CHECK(back.owner == "ana");
    CHECK(back.kernel == "python3");
    CHECK(back.network_allow == std::vector<std::string>{"pypi.org:443"});
    CHECK(back.policy == callisto::gateway::kernels::kernel_policy::fresh);
    CHECK(back.snapshot_id == snapshot_id);
    CHECK(back.created_at == r.created_at);
    CHECK(back.paused_at == r.paused_at);
}

TEST_CASE("a paused context is listed as paused (or resuming), with no kernel") {
    const auto m = sample_record().model({"python"}, false);
    CHECK(m["state"] == "paused");
    CHECK(m["kernel_id"].is_null());
    CHECK(m["paused_at"] == "2026-11-25T11:00:00.000001Z");
    CHECK(m["network"]["allow"] == json::array({"pypi.org:443"}));
    CHECK(sample_record().model({"python"}, true)["state"] == "resuming");
}

TEST_CASE("a paused context's record: every bad form is refused with what is wrong") {
    const json good = sample_record().to_json();
    auto refused = [](const json& j, const std::string& why) {
        CHECK_THROWS_WITH_AS(paused_record::from_json(j), why.c_str(), std::invalid_argument);
    };
    refused(json::array(), "not an object");
    refused(json("text"), "not an object");
    for (const char* field : {"id", "owner", "kernel", "network_allow", "policy", "snapshot_id",
                              "created_at", "paused_at"}) {
        auto missing = good;
        missing.erase(field);
        refused(missing, std::string("no '") + field + "'");
    }
    auto with = [&good](const char* field, json value) {
        auto j = good;
        j[field] = std::move(value);
        return j;
    };
    refused(with("unknown", 1), "unknown field 'unknown'");
    refused(with("id", "../../etc/passwd"), "'id' is not an id");
    refused(with("id", 42), "'id' is not a string");
    refused(with("snapshot_id", "not-a-snapshot/.."), "'snapshot_id' is not an id");
    refused(with("owner", ""), "'owner' is empty");
    refused(with("kernel", ""), "'kernel' is empty");
    refused(with("network_allow", "pypi.org:443"), "'network_allow' is not a list");
    refused(with("network_allow", json::array({1})), "'network_allow' holds something not a rule");
    refused(with("network_allow", json::array({""})), "'network_allow' holds something not a rule");
    refused(with("policy", "sometimes"), "'policy' is not a kernel policy");
    refused(with("created_at", "yesterday"), "'created_at' is not an ISO 8601 time");
    refused(with("paused_at", 1700000000), "'paused_at' is not a string");
}

TEST_CASE(
    "the paused record store reads back its records and drops, with a reason, what it "
    "cannot trust") {
    callisto::test::temp_dir t;
    const auto records = t.path() / "paused";  // made by the store
    paused_record_store store(records, {});
    REQUIRE(store.save(sample_record()) == "");
    const auto good = sample_record(other_id);
    REQUIRE(store.save(good) == "");
    // Truncated (a torn write from elsewhere), tampered (another id inside), unknown fields,
    // not JSON at all: each is dropped and removed, never fatal.
    const std::string truncated = "33333333-3333-4333-8333-333333333333";
    std::ofstream(records / (truncated + ".json"))
        << sample_record(truncated).to_json().dump().substr(0, 40);
    const std::string tampered = "44444444-4444-4444-8444-444444444444";
    std::ofstream(records / (tampered + ".json")) << sample_record(context_id).to_json().dump();
    const std::string unknown = "55555555-5555-4555-8555-555555555555";
    auto extra = sample_record(unknown).to_json();
    extra["kernel_id"] = "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11";
    std::ofstream(records / (unknown + ".json")) << extra.dump();

    // The first record's snapshot is gone: that context is dropped too.
    auto loaded = store.load([](const paused_record& r) { return r.id != context_id; });
    REQUIRE(loaded.records.size() == 1);
    CHECK(loaded.records[0].id == other_id);
    REQUIRE(loaded.problems.size() == 4);
    std::string all;
    for (const auto& p : loaded.problems) all += p + "\n";
    CHECK(all.find(truncated + ".json: not JSON") != std::string::npos);
    CHECK(all.find(tampered + ".json: its id is not its file's name") != std::string::npos);
    CHECK(all.find(unknown + ".json: unknown field 'kernel_id'") != std::string::npos);
    CHECK(all.find(context_id + ".json: its snapshot " + snapshot_id + " is gone") !=
          std::string::npos);
    for (const auto& id : {context_id, truncated, tampered, unknown})
        CHECK_FALSE(fs::exists(records / (id + ".json")));
    CHECK(fs::exists(records / (other_id + ".json")));

    store.remove(other_id);
    CHECK(store.load(always).records.empty());
    CHECK(fs::is_empty(records));  // no temporary file left either
}

TEST_CASE("a paused context resumes once: the first asker runs it, the others join it") {
    paused_table table;
    REQUIRE(table.add(sample_record()));
    CHECK_FALSE(table.add(sample_record()));  // paused already
    std::vector<std::string> told;
    auto waiter = [&told](const std::string& who) {
        return [&told, who](const paused_table::outcome& how) {
            told.push_back(who + ":" + std::to_string(how.status) + ":" + how.error + ":" +
                           std::to_string(how.duration_ms));
        };
    };
    CHECK(table.start_resume(context_id, waiter("a")) == paused_table::resume_start::begin);
    CHECK(table.resuming(context_id));
    CHECK(table.start_resume(context_id, waiter("b")) == paused_table::resume_start::joined);
    CHECK(table.start_resume(other_id, waiter("x")) == paused_table::resume_start::unknown);
    // Not deleted under a resume that runs.
    CHECK(table.remove(context_id) == paused_table::remove_result::resuming);

    auto waiters = table.finish_resume(context_id, true);
    REQUIRE(waiters.size() == 2);
    for (auto& w : waiters) w({0, "", "", 1200});
    CHECK(told == std::vector<std::string>{"a:0::1200", "b:0::1200"});
    // Live again: no longer paused.
    CHECK(table.find(context_id) == nullptr);
    CHECK(table.size() == 0);
    CHECK(table.start_resume(context_id, waiter("c")) == paused_table::resume_start::unknown);
}

TEST_CASE("a resume that fails leaves the context paused, for the next request to try again") {
    paused_table table;
    REQUIRE(table.add(sample_record()));
    CHECK(table.start_resume(context_id, [](const paused_table::outcome&) {}) ==
          paused_table::resume_start::begin);
    CHECK(table.finish_resume(context_id, false).size() == 1);
    REQUIRE(table.find(context_id) != nullptr);
    CHECK_FALSE(table.resuming(context_id));
    CHECK(table.start_resume(context_id, [](const paused_table::outcome&) {}) ==
          paused_table::resume_start::begin);
    CHECK(table.finish_resume(other_id, true).empty());  // unknown: nothing to tell
}

TEST_CASE("a paused context is deleted whole, once") {
    paused_table table;
    REQUIRE(table.add(sample_record()));
    paused_record removed;
    CHECK(table.remove(context_id, &removed) == paused_table::remove_result::removed);
    CHECK(removed.snapshot_id == snapshot_id);
    CHECK(table.remove(context_id) == paused_table::remove_result::unknown);
    CHECK(table.all().empty());
}

namespace {

std::chrono::system_clock::time_point at(const char* iso) {
    return *callisto::kernelproto::parse_iso_time(iso);
}

}  // namespace

TEST_CASE("a paused context expires its TTL after the pause time its record keeps") {
    const auto record = sample_record();  // paused at 2026-11-25T11:00:00.000001Z
    CHECK(record.expires_at(std::chrono::hours(24)) == at("2026-11-26T11:00:00.000001Z"));
    CHECK_FALSE(record.expires_at(std::chrono::seconds(0)));  // kept for ever
    const auto model = record.model({"python"}, false, std::chrono::hours(24 * 30));
    CHECK(model["expires_at"] == "2026-12-25T11:00:00.000001Z");
    CHECK(record.model({"python"}, false)["expires_at"].is_null());
    CHECK(record.model({"python"}, false, std::chrono::seconds(0))["expires_at"].is_null());
}

TEST_CASE(
    "the expired paused contexts are those past their TTL at the clock given, never one "
    "resuming") {
    paused_table table;
    auto early = sample_record();
    early.paused_at = "2026-11-25T10:00:00.000000Z";
    REQUIRE(table.add(early));
    auto late = sample_record(other_id);
    late.paused_at = "2026-11-25T12:00:00.000000Z";
    REQUIRE(table.add(late));
    const auto ttl = std::chrono::hours(1);
    CHECK(table.expired(at("2026-11-25T10:59:59.999999Z"), ttl).empty());
    // At its expiry exactly, not a microsecond later.
    CHECK(table.expired(at("2026-11-25T11:00:00.000000Z"), ttl) ==
          std::vector<std::string>{context_id});
    CHECK(table.expired(at("2026-11-25T13:00:00.000000Z"), ttl).size() == 2);
    // TTL 0: kept for ever, however long ago.
    CHECK(table.expired(at("2036-01-01T00:00:00.000000Z"), std::chrono::seconds(0)).empty());
    // One resuming is about to be live: it is not deleted under its resume, and once the
    // resume fails it is paused, and expired, again.
    REQUIRE(table.start_resume(context_id, [](const auto&) {}) ==
            paused_table::resume_start::begin);
    CHECK(table.expired(at("2026-11-25T13:00:00.000000Z"), ttl) ==
          std::vector<std::string>{other_id});
    table.finish_resume(context_id, false);
    CHECK(table.expired(at("2026-11-25T13:00:00.000000Z"), ttl).size() == 2);
}
