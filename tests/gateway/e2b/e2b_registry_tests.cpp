// The E2B facade's sandbox registry: owners, tokens and lifetimes, with a clock the test
// moves (no sleeping).

#include <doctest/doctest.h>

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
