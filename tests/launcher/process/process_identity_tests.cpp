#include "launcher/process/process_identity.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

using namespace callisto::launcher;

TEST_CASE("a process's start time and uid are read from /proc; a gone pid has none") {
    const auto ticks = process_start_ticks(::getpid());
    REQUIRE(ticks.has_value());
    CHECK(*ticks > 0);
    CHECK(process_start_ticks(::getpid()) == ticks);  // stable
    CHECK(process_real_uid(::getpid()) == ::getuid());

    const pid_t child = ::fork();
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    REQUIRE(child > 0);
    const auto child_ticks = process_start_ticks(child);
    CHECK(child_ticks.has_value());
    CHECK(child_ticks >= ticks);
    ::kill(child, SIGKILL);
    // A zombie runs nothing: as good as gone.
    for (int i = 0; i < 200 && process_start_ticks(child); ++i) ::usleep(5000);
    CHECK_FALSE(process_start_ticks(child).has_value());
    ::waitpid(child, nullptr, 0);
    CHECK_FALSE(process_start_ticks(child).has_value());
    CHECK_FALSE(process_real_uid(child).has_value());
}
