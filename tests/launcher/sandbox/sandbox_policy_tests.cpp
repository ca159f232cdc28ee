#include <doctest/doctest.h>

#include <stdexcept>

#include "launcher/sandbox/sandbox_policy.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"

using namespace callisto::launcher;

TEST_CASE("a kernelspec's sizes take bytes or binary units, and never 0") {
    sandbox_policy base;
    CHECK(base.with_overrides({{"memory", "2GiB"}}).memory_bytes == 2ull << 30);
    CHECK(base.with_overrides({{"tmp", "512KiB"}}).tmp_bytes == 512u << 10);
    CHECK(base.with_overrides({{"disk", "1000"}}).disk_bytes == 1000);
    CHECK(base.with_overrides({{"disk", "1TiB"}}).disk_bytes == 1ull << 40);
    for (const char* bad : {"2GB", "0", "GiB", "-1MiB", "99999999TiB"})
        CHECK_THROWS_AS((void)base.with_overrides({{"memory", bad}}), std::invalid_argument);
    CHECK(base.describe().find("memory 2GiB") != std::string::npos);
}

TEST_CASE("a kernelspec's limits override only the fields it names") {
    sandbox_policy base;
    const auto p =
        base.with_overrides({{"memory", "4GiB"}, {"pids", 512}, {"cpu", 0.5}, {"disk", 1048576}});
    CHECK(p.memory_bytes == 4ull << 30);
    CHECK(p.pids == 512);
    CHECK(p.cpu_cores == doctest::Approx(0.5));
    CHECK(p.disk_bytes == 1u << 20);
    CHECK(p.cpu_time_seconds == base.cpu_time_seconds);
    CHECK(p.tmp_bytes == base.tmp_bytes);
}

TEST_CASE("bad kernelspec limits are rejected naming the field") {
    sandbox_policy base;
    auto message = [&](const nlohmann::json& limits) {
        try {
            (void)base.with_overrides(limits);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    CHECK(message({{"memory", "lots"}}).find("limits.memory") != std::string::npos);
    CHECK(message({{"pids", 0}}).find("limits.pids") != std::string::npos);
    CHECK(message({{"cpu", -1}}).find("limits.cpu") != std::string::npos);
    CHECK(message({{"swap", 1}}).find("limits.swap: unknown") != std::string::npos);
    CHECK(message(nlohmann::json::array()).find("expected an object") != std::string::npos);
}

TEST_CASE("the uid pool hands out distinct non-root uids and reuses released ones last") {
    sandbox_uid_pool pool(60000, 2);
    auto a = pool.acquire();
    auto b = pool.acquire();
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->uid != b->uid);
    CHECK(a->gid == a->uid);
    CHECK_FALSE(pool.acquire());
    pool.release(*a);
    auto c = pool.acquire();
    REQUIRE(c);
    CHECK(c->uid == a->uid);
    CHECK_THROWS_AS(sandbox_uid_pool(0, 10), std::invalid_argument);
}

TEST_CASE("a reserved uid is held for its adopter alone, and a cancelled one is free again") {
    sandbox_uid_pool pool(60000, 3);
    CHECK(pool.reserve(60001));
    CHECK_FALSE(pool.reserve(60001));  // held
    CHECK_FALSE(pool.reserve(70000));  // outside the range
    auto a = pool.acquire();
    auto b = pool.acquire();
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->uid != 60001);  // the others never get it
    CHECK(b->uid != 60001);
    CHECK_FALSE(pool.acquire());
    auto adopter = pool.acquire(60001);  // the adopter does
    REQUIRE(adopter);
    CHECK_FALSE(pool.acquire(60001));  // once
    pool.cancel_reservation(60001);    // acquired since: it stays taken
    CHECK_FALSE(pool.acquire(60001));
    pool.release(*adopter);
    CHECK(pool.reserve(60001));
    pool.cancel_reservation(60001);  // never acquired: free again
    CHECK(pool.acquire(60001));
}
