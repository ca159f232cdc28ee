#include "gateway/kernels/output/message_budget.hpp"

#include <memory>
#include <vector>

#include <doctest/doctest.h>

using callisto::gateway::kernels::message_budget;

TEST_CASE("message budget holds a message's bytes until its last lease copy is gone") {
    message_budget budget(1000);
    auto lease = budget.lease(300);
    CHECK(budget.held_bytes() == 300);
    auto copy = lease;
    lease.reset();
    CHECK(budget.held_bytes() == 300);
    copy.reset();
    CHECK(budget.held_bytes() == 0);
}

TEST_CASE("message budget refuses a large message that would pass it, and counts the refusal") {
    const std::size_t big = 1u << 20;
    message_budget budget(2 * big);
    CHECK(budget.admit(big));
    auto first = budget.lease(big);
    CHECK(budget.admit(big));
    auto second = budget.lease(big);
    CHECK_FALSE(budget.admit(big));
    CHECK_FALSE(budget.admit(big + 1));
    auto dropped = budget.take_dropped();
    CHECK(dropped.messages == 2);
    CHECK(dropped.bytes == 2 * big + 1);
    CHECK(budget.take_dropped().messages == 0);  // taken
    first.reset();
    CHECK(budget.admit(big));
}

TEST_CASE("message budget lets small messages through over it, within their own allowance") {
    message_budget budget(1u << 20);
    auto full = budget.lease(1u << 20);
    CHECK(budget.admit(100));  // a status or a reply: a waiting client needs it
    CHECK(budget.admit(message_budget::small_message_bytes));
    CHECK_FALSE(budget.admit(message_budget::small_message_bytes + 1));
    std::vector<std::shared_ptr<const void>> smalls;
    while (budget.admit(message_budget::small_message_bytes))
        smalls.push_back(budget.lease(message_budget::small_message_bytes));
    // The allowance is bounded too: a flood of small messages stops.
    CHECK(budget.held_bytes() <=
          (1u << 20) + message_budget::small_allowance_bytes + message_budget::small_message_bytes);
    CHECK_FALSE(budget.admit(1));
}

TEST_CASE("message budget of zero admits everything") {
    message_budget budget(0);
    auto lease = budget.lease(1u << 30);
    CHECK(budget.admit(1u << 30));
}

TEST_CASE("message budget leases may outlive the budget") {
    std::shared_ptr<const void> lease;
    {
        message_budget budget(10);
        lease = budget.lease(5);
    }
    lease.reset();  // no crash: the counters live with the leases
}
