// Context records (--state-dir): what an execution keeps of itself, how a recorded one comes
// back after a gateway restart, and the record's JSON with its bad forms.

#include "gateway/interpreter/context_record.hpp"

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "gateway/interpreter/execution.hpp"

using namespace callisto::gateway::interpreter;
namespace fs = std::filesystem;

namespace {

const std::string context_id = "0f1e2d3c-4b5a-4968-8776-655443322110";

std::shared_ptr<execution> finished_execution(const std::string& stdout_text) {
    execution_request request;
    request.code = "print('x')";
    request.idempotency_key = "key-1";
    auto e = std::make_shared<execution>("11111111-2222-4333-8444-555555555555", context_id,
                                         request, 1 << 20);
    e->mark_started();
    e->add_stream("stdout", stdout_text);
    e->add_result({{"text/plain", "42"}}, nlohmann::json::object());
    e->add_result({{"image/png", std::string(10000, 'A')}}, nlohmann::json::object());
    e->set_execution_count(3);
    e->finish(execution_status::ok);
    return e;
}

context_record sample_context() {
    context_record r;
    r.id = context_id;
    r.owner = "ana";
    r.kernel_id = "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11";
    r.policy = callisto::gateway::kernels::kernel_policy::fresh;
    r.kernel_uses = 2;
    r.workdir = "/var/lib/callisto/work/0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11";
    r.created_at = "2026-11-25T10:00:00.000001Z";
    r.executions.push_back(finished_execution("hello\n")->to_record());
    return r;
}

}  // namespace

TEST_CASE("an execution's record keeps the tail of long output and only short text results") {
    const std::string long_text = std::string(6000, 'a') + "THE END\n";
    const auto saved = finished_execution(long_text)->to_record();
    const auto text = saved["stdout"].get<std::string>();
    CHECK(text.size() < 2200);
    CHECK(text.find("bytes not recorded ...]") != std::string::npos);
    CHECK(text.substr(text.size() - 8) == "THE END\n");
    REQUIRE(saved["results"].size() == 1);  // the image is not kept
    CHECK(saved["results"][0]["data"]["text/plain"] == "42");
    CHECK(saved["status"] == "ok");
    CHECK(saved["execution_count"] == 3);
    CHECK(saved["idempotency_key"] == "key-1");
}

TEST_CASE(
    "an execution's record keeps a few KiB of its error and of its results, whatever their size") {
    execution_request request;
    auto e = std::make_shared<execution>("11111111-2222-4333-8444-555555555555", context_id,
                                         request, 1 << 20);
    e->mark_started();
    for (int i = 0; i < 1000; ++i)
        e->add_result({{"text/plain", std::string(1000, 'r')}}, nlohmann::json::object());
    std::vector<std::string> traceback(500, std::string(900, 't'));
    traceback.back() = "ValueError: " + std::string(900'000, 'v') + " LAST";
    e->set_error("ValueError", std::string(1'000'000, 'v') + " LAST", traceback);
    e->finish(execution_status::error);
    const auto saved = e->to_record();
    CHECK(saved.dump().size() < 20'000);
    const std::string value = saved["error"]["value"];
    CHECK(value.find("bytes not recorded ...]") != std::string::npos);
    CHECK(value.ends_with(" LAST"));
    REQUIRE_FALSE(saved["error"]["traceback"].empty());
    CHECK(saved["error"]["traceback"].back().get<std::string>().ends_with(" LAST"));
    CHECK(saved["results"].size() == 8);
    const auto& fields = saved["truncated"]["fields"];
    REQUIRE(fields.size() == 1);
    CHECK(fields[0]["field"] == "results");
    CHECK(fields[0]["bytes"] == 992 * 1000);
    // Read back, it answers as recorded, the cut fields listed.
    auto back = execution::restored(saved, context_id)->to_json();
    CHECK(back["truncated"]["fields"] == fields);
}

TEST_CASE("a recorded execution comes back as recorded, marked restored") {
    const auto saved = finished_execution("hello\n")->to_record();
    auto e = execution::restored(saved, context_id);
    CHECK(e->id() == saved["id"]);
    CHECK(e->finished());
    CHECK(e->status() == execution_status::ok);
    CHECK(e->request().idempotency_key == "key-1");
    const auto j = e->to_json();
    CHECK(j["stdout"] == "hello\n");
    CHECK(j["restored"] == true);
    CHECK(e->summary()["restored"] == true);
    CHECK(e->summary()["status"] == "ok");
    // Later calls change nothing: it is a record.
    e->add_stream("stdout", "more");
    e->finish(execution_status::error);
    CHECK(e->to_json()["stdout"] == "hello\n");
    std::optional<nlohmann::json> end;
    e->subscribe(
        [&](const nlohmann::json& ev, bool last) {
            if (last) end = ev;
        },
        true);
    REQUIRE(end);
    CHECK((*end)["execution"]["restored"] == true);
}

TEST_CASE("an execution queued or running at the restart is reported as ended by it") {
    auto record_of = [](const char* status) {
        auto saved = finished_execution("")->to_record();
        saved["status"] = status;
        return saved;
    };
    auto ran = execution::restored(record_of("running"), context_id)->to_json();
    CHECK(ran["status"] == "error");
    CHECK(ran["error"]["name"] == "GatewayRestarted");
    CHECK(ran["error"]["value"].get<std::string>().find("went on running it") != std::string::npos);
    CHECK(ran["state_preserved"] == true);
    auto waited = execution::restored(record_of("queued"), context_id)->to_json();
    CHECK(waited["error"]["value"].get<std::string>().find("never ran") != std::string::npos);
}

TEST_CASE("a malformed execution record is refused") {
    auto saved = finished_execution("")->to_record();
    CHECK_THROWS_AS(execution::restored(nlohmann::json::array(), context_id),
                    std::invalid_argument);
    auto no_id = saved;
    no_id.erase("id");
    CHECK_THROWS_WITH_AS(execution::restored(no_id, context_id),
                         "an execution record has no string 'id'", std::invalid_argument);
    auto bad_status = saved;
    bad_status["status"] = "finished";
    CHECK_THROWS_WITH_AS(execution::restored(bad_status, context_id),
                         "an execution record has status 'finished'", std::invalid_argument);
}

TEST_CASE("a context record reads back as written; its bad forms are refused") {
    const auto r = sample_context();
    const auto back = context_record::from_json(r.to_json());
    CHECK(back.id == r.id);
    CHECK(back.owner == "ana");
    CHECK(back.kernel_id == r.kernel_id);
    CHECK(back.policy == callisto::gateway::kernels::kernel_policy::fresh);
    CHECK(back.kernel_uses == 2);
    CHECK(back.workdir == r.workdir);
    CHECK(back.created_at == r.created_at);
    CHECK(back.executions.size() == 1);
    CHECK_FALSE(back.via_e2b);
    auto e2b = r;
    e2b.via_e2b = true;
    e2b.start_dir = e2b.home = "/home/user";
    e2b.shares_files_of = "5d0c1f4e-1b7a-4c55-a1f3-6f1f3c0e2a77";
    const auto e2b_back = context_record::from_json(e2b.to_json());
    CHECK(e2b_back.via_e2b);
    CHECK(e2b_back.start_dir == "/home/user");
    CHECK(e2b_back.home == "/home/user");
    CHECK(e2b_back.shares_files_of == e2b.shares_files_of);
    auto older = r.to_json();  // written before these fields were
    for (const char* field : {"via_e2b", "start_dir", "home", "shares_files_of"})
        older.erase(field);
    const auto older_back = context_record::from_json(older);
    CHECK_FALSE(older_back.via_e2b);
    CHECK(older_back.start_dir.empty());
    CHECK(older_back.home.empty());
    CHECK(older_back.shares_files_of.empty());

    auto with = [&](const char* field, nlohmann::json value) {
        auto j = r.to_json();
        j[field] = std::move(value);
        return j;
    };
    CHECK_THROWS_WITH_AS(context_record::from_json(with("policy", "sometimes")),
                         "'policy' is not a kernel policy", std::invalid_argument);
    CHECK_THROWS_WITH_AS(context_record::from_json(with("kernel_uses", -1)),
                         "'kernel_uses' is not a whole number", std::invalid_argument);
    CHECK_THROWS_WITH_AS(context_record::from_json(with("executions", "none")),
                         "'executions' is not a list", std::invalid_argument);
    CHECK_THROWS_WITH_AS(context_record::from_json(with("owner", 7)), "'owner' is not a string",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(context_record::from_json(with("via_e2b", "yes")),
                         "'via_e2b' is not a boolean", std::invalid_argument);
    CHECK_THROWS_WITH_AS(context_record::from_json(with("shares_files_of", 3)),
                         "'shares_files_of' is not a string", std::invalid_argument);
    auto missing = r.to_json();
    missing.erase("kernel_id");
    CHECK_THROWS_WITH_AS(context_record::from_json(missing), "no 'kernel_id'",
                         std::invalid_argument);
}

TEST_CASE("the context record store keeps one file per context and drops unreadable ones") {
    const auto dir =
        fs::temp_directory_path() / ("callisto-contexts-" + std::to_string(::getpid()));
    {
        context_record_store store(dir, {});
        const auto r = sample_context();
        CHECK(store.save(r) == "");
        std::ofstream(dir / "22222222-2222-4222-8222-222222222222.json") << "[]";
        auto loaded = store.load();
        REQUIRE(loaded.records.size() == 1);
        CHECK(loaded.records[0].id == r.id);
        REQUIRE(loaded.problems.size() == 1);
        CHECK(loaded.problems[0].find("not an object") != std::string::npos);
        CHECK_FALSE(fs::exists(dir / "22222222-2222-4222-8222-222222222222.json"));
        store.remove(r.id);
        CHECK(store.load().records.empty());
        CHECK(fs::is_empty(dir));  // no temporary file left either
    }
    fs::remove_all(dir);
}
