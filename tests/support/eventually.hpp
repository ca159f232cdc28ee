#pragma once
// Polling for a condition instead of sleeping a fixed time: the test machines are noisy.

#include <chrono>
#include <thread>

namespace callisto::test {

// True as soon as `condition` holds, false after `timeout` (generous: a loaded 2-core machine).
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace callisto::test
