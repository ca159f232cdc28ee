// The E2B facade's sandbox registry: owners, tokens and lifetimes, with a clock the test
// moves (no sleeping).

#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>

#include "gateway/e2b/sandbox_record.hpp"
#include "gateway/e2b/sandbox_registry.hpp"

using namespace callisto::gateway;
using namespace callisto::gateway::e2b;
using namespace std::chrono_literals;

namespace {

struct fixture {
    std::chrono::system_clock::time_point now{std::chrono::hours(1000)};
    int tokens = 0;
    sandbox_registry registry{
        [this] { return now; },
        [this] { return "token-" + std::to_string(++tokens) + "-0123456789abcdef"; }};
    user alice{"alice"};
    user bob{"bob"};
    user admin{"root", true};

    sandbox_record add(const user& owner, std::chrono::seconds timeout = 300s) {
        auto r = registry.make("base", "python3", owner, {{"k", "v"}}, timeout);
        r.contexts.push_back({"ctx-" + r.id, "python", "/home/user"});
        r.default_context = r.contexts.front().id;
        registry.add(r);
        return r;
    }
};

}  // namespace

TEST_CASE("a new sandbox has a valid id, two distinct tokens and its end") {
    fixture f;
    auto r = f.add(f.alice, 60s);
    CHECK(is_valid_sandbox_id(r.id));
    CHECK(!r.envd_token.empty());
    CHECK(r.envd_token != r.traffic_token);
    CHECK(r.end_at - r.started_at == 60s);
    CHECK(f.add(f.alice).id != r.id);
}

TEST_CASE("sandbox ids are checked before any lookup") {
    CHECK(is_valid_sandbox_id("abcdefghij0123456789"));
    for (const char* bad : {"", "abc", "ABCDEFGHIJ0123456789", "abcdefghij012345678-",
                            "abcdefghij0123456789x", "../../../etc/passwd0"})
        CHECK_MESSAGE(!is_valid_sandbox_id(bad), bad);
}

TEST_CASE("others' sandboxes are unknown; an admin sees all") {
    fixture f;
    auto r = f.add(f.alice);
    CHECK(f.registry.find_for(r.id, f.alice));
    CHECK(!f.registry.find_for(r.id, f.bob));
    CHECK(f.registry.find_for(r.id, f.admin));
    CHECK(!f.registry.find_for("nosuchsandbox0000000", f.alice));
    CHECK(f.registry.list_for(f.bob).empty());
    CHECK(f.registry.list_for(f.alice).size() == 1);
    // The admin console's list: everyone's, whoever asks.
    auto b = f.add(f.bob);
    const auto all = f.registry.all();
    REQUIRE(all.size() == 2);
    CHECK((all[0].id == r.id || all[1].id == r.id));
    CHECK((all[0].id == b.id || all[1].id == b.id));
    CHECK(!f.registry.set_timeout(r.id, f.bob, 10s));
    CHECK(!f.registry.remove(r.id, f.bob));
    CHECK(f.registry.count_for("alice") == 1);
}

TEST_CASE("the data plane needs either of the sandbox's own tokens") {
    fixture f;
    auto a = f.add(f.alice);
    auto b = f.add(f.alice);
    CHECK(f.registry.find_by_token(a.id, a.envd_token, ""));
    CHECK(f.registry.find_by_token(a.id, "", a.traffic_token));
    CHECK(!f.registry.find_by_token(a.id, "", ""));
    CHECK(!f.registry.find_by_token(a.id, b.envd_token, b.traffic_token));
    CHECK(!f.registry.find_by_token(a.id, a.envd_token.substr(1), ""));
    CHECK(!f.registry.find_by_token("unknownsandbox000000", a.envd_token, ""));
}

TEST_CASE("a sandbox past its end is taken by the culler, and setTimeout moves the end") {
    fixture f;
    auto short_lived = f.add(f.alice, 10s);
    auto long_lived = f.add(f.alice, 100s);
    f.now += 5s;
    CHECK(f.registry.take_expired().empty());
    CHECK(f.registry.set_timeout(short_lived.id, f.alice, 20s));  // now ends at +25 s
    f.now += 10s;
    CHECK(f.registry.take_expired().empty());
    f.now += 11s;
    auto gone = f.registry.take_expired();
    REQUIRE(gone.size() == 1);
    CHECK(gone[0].id == short_lived.id);
    CHECK(gone[0].contexts.size() == 1);  // handed over, for the caller to close
    CHECK(!f.registry.find_for(short_lived.id, f.alice));
    CHECK(f.registry.find_for(long_lived.id, f.alice));
    CHECK(f.registry.take_all().size() == 1);
    CHECK(f.registry.list_for(f.admin).empty());
}

TEST_CASE("contexts join and leave their sandbox; a killed sandbox takes none") {
    fixture f;
    auto r = f.add(f.alice);
    CHECK(f.registry.add_context(r.id, {"c2", "r", "/home/user"}));
    CHECK(f.registry.find_for(r.id, f.alice)->contexts.size() == 2);
    CHECK(f.registry.remove_context(r.id, "c2"));
    CHECK(f.registry.find_for(r.id, f.alice)->contexts.size() == 1);
    auto killed = f.registry.remove(r.id, f.alice);
    REQUIRE(killed);
    CHECK(!f.registry.add_context(r.id, {"c3", "python", "/"}));
    CHECK(!f.registry.remove_context(r.id, "c3"));
}

TEST_CASE("a sandbox record reads back as written; its bad forms are refused") {
    fixture f;
    user owner{"ana", false, 3, std::vector<std::string>{"127.0.0.2:80"}};
    auto r = f.registry.make("rdata", "ir", owner, {{"k", "v"}}, 300s);
    r.env = {{"A", "1"}, {"B", "two"}};
    r.default_context = "c1";
    r.contexts = {{"c1", "python", "/home/user"}, {"c2", "r", "/home/user/sub"}};
    r.network_allow = {"127.0.0.2:80"};
    const auto back = sandbox_record::from_json(r.to_json());
    CHECK(back.to_json() == r.to_json());
    CHECK(back.owner.name == "ana");
    CHECK(back.owner.max_kernels == 3);
    CHECK(back.owner.egress_allow == owner.egress_allow);
    CHECK(back.end_at == r.end_at);
    CHECK(back.contexts.size() == 2);
    CHECK(back.contexts[1].language == "r");
    user no_ceiling{"bo"};
    r.owner = no_ceiling;
    CHECK(!sandbox_record::from_json(r.to_json()).owner.egress_allow);

    auto with = [&](const char* field, nlohmann::json value) {
        auto j = r.to_json();
        j[field] = std::move(value);
        return j;
    };
    CHECK_THROWS_WITH_AS(sandbox_record::from_json(with("id", "../../etc/passwd")),
                         "'id' is not a sandbox id", std::invalid_argument);
    CHECK_THROWS_WITH_AS(sandbox_record::from_json(with("envd_token", "")), "a token is empty",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(sandbox_record::from_json(with("end_at_ms", -5)),
                         "'end_at_ms' is not a whole number", std::invalid_argument);
    CHECK_THROWS_WITH_AS(sandbox_record::from_json(with("env", {{"A"}})),
                         "'env' holds something other than [name, value]", std::invalid_argument);
    CHECK_THROWS_WITH_AS(sandbox_record::from_json(with("metadata", {{"k", 1}})),
                         "'metadata' holds a non-string", std::invalid_argument);
    CHECK_THROWS_WITH_AS(sandbox_record::from_json(with("contexts", {{{"id", "c"}}})),
                         "no 'language'", std::invalid_argument);
    CHECK_THROWS_WITH_AS(sandbox_record::from_json(with("owner", "ana")),
                         "'owner' is not an object", std::invalid_argument);
    CHECK_THROWS_AS(sandbox_record::from_json(nlohmann::json::array()), std::invalid_argument);
}

TEST_CASE(
    "with a record store, each change of a sandbox is written down, and its end crossed out") {
    namespace fs = std::filesystem;
    const auto dir = fs::temp_directory_path() / ("callisto-e2b-" + std::to_string(::getpid()));
    {
        sandbox_record_store store(dir, {});
        std::chrono::system_clock::time_point now{std::chrono::hours(1000)};
        int tokens = 0;
        sandbox_registry registry(
            [&] { return now; },
            [&] { return "token-" + std::to_string(++tokens) + "-0123456789abcdef"; }, &store);
        auto saved = [&] {
            std::map<std::string, sandbox_record> out;
            for (auto& r : store.load().records) out.emplace(r.id, std::move(r));
            return out;
        };
        user ana{"ana"};
        auto a = registry.make("base", "python3", ana, {}, 60s);
        a.default_context = "c1";
        a.contexts = {{"c1", "python", "/home/user"}};
        registry.add(a);
        auto b = registry.make("base", "python3", ana, {}, 600s);
        registry.add(b);
        CHECK(saved().size() == 2);

        CHECK(registry.add_context(a.id, {"c2", "python", "/home/user"}));
        CHECK(saved().at(a.id).contexts.size() == 2);
        CHECK(registry.remove_context(a.id, "c2"));
        CHECK(saved().at(a.id).contexts.size() == 1);
        now += 30s;
        CHECK(registry.set_timeout(a.id, ana, 120s));
        CHECK(saved().at(a.id).end_at == now + 120s);

        now += 200s;  // a ends
        CHECK(registry.take_expired().size() == 1);
        CHECK(!saved().contains(a.id));
        CHECK(registry.remove(b.id, ana));
        CHECK(saved().empty());

        // What an earlier gateway wrote comes back as it was.
        std::ofstream(dir / "zzzzzzzzzzzzzzzzzzzz.json") << "{\"id\": 5}";
        auto c = registry.make("base", "python3", ana, {}, 60s);
        registry.add(c);
        auto loaded = store.load();
        REQUIRE(loaded.records.size() == 1);
        CHECK(loaded.records[0].envd_token == c.envd_token);
        REQUIRE(loaded.problems.size() == 1);
        CHECK(!fs::exists(dir / "zzzzzzzzzzzzzzzzzzzz.json"));
    }
    fs::remove_all(dir);
}
