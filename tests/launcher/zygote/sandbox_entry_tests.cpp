// The /proc parsers callisto-enter reads a sandbox with (launcher/zygote/sandbox_entry.hpp):
// what a sandbox's pid 1 shows, and the bad forms, refused rather than guessed.

#include "launcher/zygote/sandbox_entry.hpp"

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <sstream>
#include <stdexcept>

using namespace callisto::launcher;
using namespace callisto::launcher::zygote;

namespace {

// A sandboxed kernel's /proc/P/limits, as Linux prints it (the columns are 26 and 21 wide).
const char* const sandbox_limits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              600                  610                  seconds   \n"
    "Max file size             67108864             67108864             bytes     \n"
    "Max data size             unlimited            unlimited            bytes     \n"
    "Max stack size            8388608              unlimited            bytes     \n"
    "Max core file size        0                    0                    bytes     \n"
    "Max resident set          unlimited            unlimited            bytes     \n"
    "Max processes             64                   64                   processes \n"
    "Max open files            1024                 1024                 files     \n"
    "Max locked memory         65536                65536                bytes     \n"
    "Max address space         unlimited            unlimited            bytes     \n"
    "Max file locks            unlimited            unlimited            locks     \n"
    "Max pending signals       95577                95577                signals   \n";

std::vector<resource_limit> limits_of(const std::string& text) {
    std::istringstream in(text);
    return parse_limits(in);
}

const resource_limit& find(const std::vector<resource_limit>& all, int resource) {
    for (const auto& l : all)
        if (l.resource == resource) return l;
    throw std::logic_error("missing");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
}

}  // namespace

TEST_CASE("parse_limits reads the nine limits a sandbox sets, unlimited as RLIM_INFINITY") {
    const auto all = limits_of(sandbox_limits);
    CHECK(all.size() == 9);
    CHECK(find(all, RLIMIT_CPU).soft == 600);
    CHECK(find(all, RLIMIT_CPU).hard == 610);
    CHECK(find(all, RLIMIT_NPROC).soft == 64);
    CHECK(find(all, RLIMIT_FSIZE).hard == 67108864);
    CHECK(find(all, RLIMIT_STACK).soft == 8388608);
    CHECK(find(all, RLIMIT_STACK).hard == RLIM_INFINITY);
    CHECK(find(all, RLIMIT_AS).soft == RLIM_INFINITY);
    CHECK(find(all, RLIMIT_CORE).hard == 0);
}

TEST_CASE("parse_limits refuses a file that lacks a limit, has a word for a number, or repeats") {
    CHECK_THROWS_WITH_AS(limits_of(replaced(sandbox_limits, "Max processes ", "Max process  ")),
                         "no 'Max processes' line", std::runtime_error);
    CHECK_THROWS_AS(
        limits_of(replaced(sandbox_limits, "64                   64", "lots                 64")),
        std::runtime_error);
    CHECK_THROWS_AS(limits_of(replaced(sandbox_limits, "600 ", "-60 ")), std::runtime_error);
    CHECK_THROWS_AS(limits_of(replaced(sandbox_limits, "67108864             67108864",
                                       "99999999999999999999 67108864")),
                    std::runtime_error);
    CHECK_THROWS_AS(
        limits_of(std::string(sandbox_limits) + "Max open files            1                    1"),
        std::runtime_error);
    CHECK_THROWS_AS(limits_of(""), std::runtime_error);
    // A line cut before its values is not a value.
    CHECK_THROWS_AS(
        limits_of(replaced(sandbox_limits, "Max open files            1024                 1024",
                           "Max open files")),
        std::runtime_error);
}

TEST_CASE("parse_status_ids takes the real uid and gid, and nothing without both") {
    std::istringstream status(
        "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t60012\t60012\t60012\t60012\n"
        "Gid:\t60013\t60013\t60013\t60013\nGroups:\t\n");
    const auto ids = parse_status_ids(status);
    REQUIRE(ids);
    CHECK(ids->first == 60012);
    CHECK(ids->second == 60013);

    std::istringstream no_gid("Uid:\t60012\t60012\t60012\t60012\n");
    CHECK_FALSE(parse_status_ids(no_gid));
    std::istringstream junk("Uid:\tnobody\nGid:\t60013\n");
    CHECK_FALSE(parse_status_ids(junk));
    std::istringstream empty("");
    CHECK_FALSE(parse_status_ids(empty));
}

TEST_CASE("parse_cgroups maps each hierarchy to its path, v1 and v2, colons in paths kept") {
    std::istringstream cgroup(
        "12:pids:/callisto/k1\n"
        "4:cpu,cpuacct:/callisto/k1\n"
        "1:name=systemd:/init.scope\n"
        "0::/odd:name\n"
        "garbage\n"
        "3:memory\n");
    const auto all = parse_cgroups(cgroup);
    CHECK(all.size() == 4);
    CHECK(all.at("12:pids") == "/callisto/k1");
    CHECK(all.at("4:cpu,cpuacct") == "/callisto/k1");
    CHECK(all.at("1:name=systemd") == "/init.scope");
    CHECK(all.at("0:") == "/odd:name");  // v2: no controllers; a colon in a name is kept
    CHECK(all.count("garbage") == 0);
    CHECK(all.count("3:memory") == 0);
}

TEST_CASE("hierarchy_mount finds v1 controllers, named hierarchies and v2 in either layout") {
    CHECK(hierarchy_mount("12", "pids", false) == "/sys/fs/cgroup/pids");
    CHECK(hierarchy_mount("4", "cpu,cpuacct", false) == "/sys/fs/cgroup/cpu,cpuacct");
    CHECK(hierarchy_mount("1", "name=systemd", false) == "/sys/fs/cgroup/systemd");
    CHECK(hierarchy_mount("0", "", true) == "/sys/fs/cgroup/unified");
    CHECK(hierarchy_mount("0", "", false) == "/sys/fs/cgroup");
}
