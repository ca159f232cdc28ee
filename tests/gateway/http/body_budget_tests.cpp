#include "gateway/http/body_budget.hpp"

#include <doctest/doctest.h>

using callisto::gateway::body_budget;

TEST_CASE("body budget reserves up to its cap and a released reservation makes room again") {
    body_budget budget(100);
    body_budget::reservation a, b, c;
    CHECK(budget.try_reserve(60, a));
    CHECK_FALSE(budget.try_reserve(41, b));
    CHECK(budget.try_reserve(40, b));
    CHECK(budget.in_use() == 100);
    CHECK_FALSE(budget.try_reserve(1, c));
    a.reset();
    CHECK(budget.in_use() == 40);
    CHECK(budget.try_reserve(60, c));
}

TEST_CASE("body budget refuses one body larger than the whole cap, without overflow") {
    body_budget budget(100);
    body_budget::reservation r;
    CHECK_FALSE(budget.try_reserve(101, r));
    CHECK_FALSE(budget.try_reserve(static_cast<std::size_t>(-1), r));
    CHECK(budget.in_use() == 0);
}

TEST_CASE("body budget reservations move, release once, and replace what they held") {
    body_budget budget(100);
    body_budget::reservation r;
    REQUIRE(budget.try_reserve(30, r));
    body_budget::reservation moved = std::move(r);
    CHECK(budget.in_use() == 30);
    REQUIRE(budget.try_reserve(20, moved));  // the 30 it held are released
    CHECK(budget.in_use() == 20);
    { body_budget::reservation gone = std::move(moved); }
    CHECK(budget.in_use() == 0);
}

TEST_CASE("body budget of zero has no cap") {
    body_budget budget(0);
    body_budget::reservation r;
    CHECK(budget.try_reserve(std::size_t{1} << 40, r));
}

TEST_CASE("body budget admits an answer that fits, or one alone, and refuses it past the cap") {
    body_budget budget(100);
    body_budget::reservation upload, answer, big;
    CHECK(budget.try_reserve_answer(150, big));  // nothing else in flight: it goes alone
    CHECK(budget.in_use() == 150);
    CHECK_FALSE(budget.try_reserve(1, upload));
    CHECK_FALSE(budget.try_reserve_answer(1, answer));
    big.reset();
    REQUIRE(budget.try_reserve(60, upload));
    CHECK_FALSE(budget.try_reserve_answer(41, answer));
    CHECK_FALSE(budget.try_reserve_answer(150, answer));
    CHECK_FALSE(budget.try_reserve_answer(static_cast<std::size_t>(-1), answer));
    CHECK(budget.try_reserve_answer(40, answer));
    CHECK(budget.in_use() == 100);
    upload.reset();
    answer.reset();
    CHECK(budget.in_use() == 0);
}
