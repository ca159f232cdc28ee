#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <string>

#include "launcher/process/instance_lock.hpp"
#include "launcher/sandbox/leftover_reaper.hpp"
#include "tests/launcher/test_support.hpp"

namespace fs = std::filesystem;
using callisto::launcher::instance_lock;
using callisto::launcher::leftover_reaper;
using callisto::launcher::leftover_scope;
using callisto::launcher::test::temp_dir;
using callisto::launcher::test::write_file;

namespace {

const std::string kernel_a = "0a1b2c3d-0000-4000-8000-00000000000a";
const std::string kernel_b = "0a1b2c3d-0000-4000-8000-00000000000b";

leftover_scope scope_for(const fs::path& root) {
    leftover_scope s;
    s.workdir_root = root;
    s.uid_first = 61000;
    s.uid_count = 100;
    s.tag = "1234abcd";
    return s;
}

}  // namespace

TEST_CASE("instance_lock: a second lock on the same workdir root is refused, naming the root") {
    temp_dir tmp;
    const auto root = tmp.path() / "work";
    instance_lock first(root);
    CHECK(fs::is_directory(root));
    std::string refusal;
    try {
        instance_lock second(root);
    } catch (const std::runtime_error& e) {
        refusal = e.what();
    }
    CHECK(refusal.find("another callisto instance is running with --workdir-root=" +
                       root.string()) != std::string::npos);
    CHECK(refusal.find("(pid " + std::to_string(::getpid()) + ")") != std::string::npos);
    // Another root is another instance's business.
    instance_lock other(tmp.path() / "other");
    CHECK(other.tag() != first.tag());
}

TEST_CASE("instance_lock: the tag and the runtime root outlive the instance; released at its end") {
    temp_dir tmp;
    const auto root = tmp.path() / "work";
    const auto runtime = tmp.path() / "run";
    fs::create_directories(runtime);
    std::string tag;
    {
        instance_lock first(root);
        tag = first.tag();
        CHECK(tag.size() == 8);
        CHECK_FALSE(first.previous_runtime_root());
        first.claim_runtime_root(runtime);
        CHECK(instance_lock::runtime_root_marked(runtime, tag));
        CHECK_FALSE(instance_lock::runtime_root_marked(runtime, "ffffffff"));
    }
    instance_lock next(root);  // the first is gone: no refusal
    CHECK(next.tag() == tag);
    REQUIRE(next.previous_runtime_root());
    CHECK(*next.previous_runtime_root() == runtime);
    for (const char* name : {".callisto.lock", ".callisto-instance", ".callisto-runtime"})
        CHECK(instance_lock::is_own_file(name));
    CHECK_FALSE(instance_lock::is_own_file(kernel_a));
}

TEST_CASE(
    "leftover processes: a uid of the range AND an argument under the workdir or runtime root") {
    auto s = scope_for("/var/lib/callisto/work");
    s.runtime_root = fs::path("/tmp/callisto-42");
    const std::string workdir = "/var/lib/callisto/work/" + kernel_a;
    CHECK(leftover_reaper::is_leftover_process(s, 61000, {"bwrap", "--bind", workdir, "/work"}));
    CHECK(leftover_reaper::is_leftover_process(s, 61099,
                                               {"python3", "-m", "ipykernel_launcher", "-f",
                                                "/tmp/callisto-42/0a1b2c3d-ab12cd/kernel.json"}));
    // Same paths, uid outside the range (root, another range): not ours to kill.
    CHECK_FALSE(leftover_reaper::is_leftover_process(s, 0, {"ls", workdir}));
    CHECK_FALSE(
        leftover_reaper::is_leftover_process(s, 61100, {"bwrap", "--bind", workdir, "/work"}));
    CHECK_FALSE(
        leftover_reaper::is_leftover_process(s, 60999, {"bwrap", "--bind", workdir, "/work"}));
    // Same uids, another instance's root (or a root that merely shares a prefix): not ours.
    CHECK_FALSE(leftover_reaper::is_leftover_process(
        s, 61000, {"bwrap", "--bind", "/srv/work/" + kernel_a, "/work"}));
    CHECK_FALSE(leftover_reaper::is_leftover_process(
        s, 61000, {"bwrap", "--bind", "/var/lib/callisto/work2/x", "/work"}));
    CHECK_FALSE(leftover_reaper::is_leftover_process(s, 61000, {"sleep", "600"}));
    CHECK_FALSE(leftover_reaper::is_leftover_process(s, 61000, {"cat", "/var/lib/callisto/work"}));
}

TEST_CASE("mounts_below: strictly below the root, deepest first, escapes decoded") {
    const std::string mountinfo =
        "22 1 0:21 / / rw shared:1 - ext4 /dev/vda rw\n"
        "40 22 0:35 / /var/lib/callisto/work rw shared:2 - ext4 /dev/vdb rw\n"
        "41 40 0:36 / /var/lib/callisto/work/" +
        kernel_a +
        " rw,nosuid,nodev shared:3 - tmpfs callisto-work rw,size=1024k\n"
        "42 41 0:37 / /var/lib/callisto/work/" +
        kernel_a +
        "/deeper rw shared:4 - tmpfs other rw\n"
        "43 22 0:38 / /var/lib/callisto/work2/x rw shared:5 - tmpfs callisto-work rw\n"
        "44 40 0:39 / /var/lib/callisto/work/with\\040space rw shared:6 - tmpfs callisto-work rw\n"
        "garbage line\n";
    const auto found = leftover_reaper::mounts_below(mountinfo, "/var/lib/callisto/work");
    REQUIRE(found.size() == 3);
    CHECK(found[0].mount_point == "/var/lib/callisto/work/" + kernel_a + "/deeper");
    CHECK(found[1].mount_point == "/var/lib/callisto/work/" + kernel_a);
    CHECK(found[1].fstype == "tmpfs");
    CHECK(found[1].source == "callisto-work");
    CHECK(found[1].device == "0:36");
    CHECK(found[2].mount_point == "/var/lib/callisto/work/with space");
}

TEST_CASE("mounts_any_of: a sandbox is known by the device of the workdir mounted in it") {
    // A sandbox's view: its /work is the host's <root>/<kernel id> tmpfs (device 0:36), under
    // a path of its own.
    const std::string sandbox =
        "300 299 0:50 / / ro,nosuid - tmpfs tmpfs rw\n"
        "301 300 254:1 /usr /usr ro,nosuid,nodev - ext4 /dev/vda rw\n"
        "302 300 0:36 / /work rw,nosuid,nodev - tmpfs callisto-work rw,size=1024k\n";
    CHECK(leftover_reaper::mounts_any_of(sandbox, {"0:36"}));
    CHECK(leftover_reaper::mounts_any_of(sandbox, {"0:99", "0:36"}));
    // Another instance's sandbox mounts its own workdir; a process with none mounts none.
    CHECK_FALSE(leftover_reaper::mounts_any_of(sandbox, {"0:37"}));
    CHECK_FALSE(leftover_reaper::mounts_any_of(sandbox, {}));
    CHECK_FALSE(leftover_reaper::mounts_any_of("", {"0:36"}));
    CHECK_FALSE(leftover_reaper::mounts_any_of("garbage\n302 300\n", {"0:36"}));
    // The device is the third field only: a path or a source that reads like one is not it.
    CHECK_FALSE(leftover_reaper::mounts_any_of("1 0 0:1 / /0:36 rw - tmpfs 0:36 rw\n", {"0:36"}));
}

TEST_CASE("is_kernel_id: lower-case UUIDs only, as session workdirs are named") {
    CHECK(leftover_reaper::is_kernel_id(kernel_a));
    CHECK_FALSE(leftover_reaper::is_kernel_id("0A1B2C3D-0000-4000-8000-00000000000A"));
    CHECK_FALSE(leftover_reaper::is_kernel_id("0a1b2c3d"));
    CHECK_FALSE(leftover_reaper::is_kernel_id(".callisto.lock"));
    CHECK_FALSE(leftover_reaper::is_kernel_id("0a1b2c3d-0000-4000-8000-00000000000a0"));
    CHECK_FALSE(leftover_reaper::is_kernel_id("0a1b2c3d_0000-4000-8000-00000000000a"));
}

TEST_CASE(
    "reap removes this root's session workdirs, its tagged cgroups and its marked runtime root; "
    "nothing else") {
    temp_dir tmp;
    const auto root = tmp.path() / "work";
    const auto runtime = tmp.path() / "run";
    fs::create_directories(runtime / "0a1b2c3d-ab12cd");
    write_file(runtime / "0a1b2c3d-ab12cd" / "kernel.json", "{}");
    std::string tag;
    {
        instance_lock previous(root);
        previous.claim_runtime_root(runtime);
        tag = previous.tag();
    }
    instance_lock lock(root);
    // A workdir owned by a sandbox uid (no quota: a plain directory) and an empty one (its
    // tmpfs was unmounted but the directory stayed); both the previous instance's.
    fs::create_directories(root / kernel_a / "sub");
    write_file(root / kernel_a / "sub" / "data.txt", "x");
    const bool can_chown = ::geteuid() == 0;
    if (can_chown) REQUIRE(::chown((root / kernel_a).c_str(), 61007, 61007) == 0);
    fs::create_directories(root / kernel_b);
    // Not named like a workdir, or not provably ours: left alone.
    fs::create_directories(root / "lost+found");
    write_file(root / "notes.txt", "keep me");
    // Cgroup hierarchies (plain directories here): ours carry the tag, others do not.
    auto s = scope_for(lock.root());
    s.tag = lock.tag();
    s.runtime_root = lock.previous_runtime_root();
    s.cgroups.version = callisto::launcher::cgroup_version::v1;
    s.cgroups.v1_memory = tmp.path() / "cg" / "memory";
    s.cgroups.v1_pids = tmp.path() / "cg" / "pids";
    s.cgroups.v1_cpu = tmp.path() / "cg" / "memory";  // one mount for two controllers
    for (const char* h : {"memory", "pids"}) {
        fs::create_directories(tmp.path() / "cg" / h / "callisto" / (tag + "-0a1b2c3d-ab12cd"));
        fs::create_directories(tmp.path() / "cg" / h / "callisto" / "99999999-0a1b2c3d-ab12cd");
        fs::create_directories(tmp.path() / "cg" / h / "callisto" / "0a1b2c3d-ab12cd");
    }
    CHECK(leftover_reaper::tagged_cgroups(s).size() == 2);

    const auto report = leftover_reaper(s).reap();
    INFO(report.describe());
    CHECK(report.processes == 0);
    CHECK(report.cgroups == 2);
    CHECK(report.workdirs == (can_chown ? 2u : 1u));
    CHECK(report.runtime_root == runtime);
    CHECK_FALSE(fs::exists(root / kernel_b));
    CHECK(fs::exists(root / kernel_a) == !can_chown);  // a non-empty dir of an unknown owner stays
    CHECK(fs::exists(root / "lost+found"));
    CHECK(fs::exists(root / "notes.txt"));
    CHECK(fs::exists(root / ".callisto.lock"));
    CHECK_FALSE(fs::exists(runtime));
    for (const char* h : {"memory", "pids"}) {
        CHECK_FALSE(fs::exists(tmp.path() / "cg" / h / "callisto" / (tag + "-0a1b2c3d-ab12cd")));
        CHECK(fs::exists(tmp.path() / "cg" / h / "callisto" / "99999999-0a1b2c3d-ab12cd"));
        CHECK(fs::exists(tmp.path() / "cg" / h / "callisto" / "0a1b2c3d-ab12cd"));
    }
    CHECK(report.problems.size() == (can_chown ? 2u : 3u));
    CHECK(report.describe().find("removed runtime root " + runtime.string()) != std::string::npos);
}

TEST_CASE("reap leaves a runtime root that does not carry this root's mark") {
    temp_dir tmp;
    const auto root = tmp.path() / "work";
    const auto runtime = tmp.path() / "run";
    fs::create_directories(runtime);
    write_file(runtime / "kernel.json", "{}");
    instance_lock lock(root);
    auto s = scope_for(lock.root());
    s.tag = lock.tag();
    s.runtime_root = runtime;  // recorded, but another instance has used the path since
    const auto report = leftover_reaper(s).reap();
    CHECK_FALSE(report.runtime_root);
    CHECK(fs::exists(runtime / "kernel.json"));
    CHECK(report.nothing_reaped());
    CHECK(report.describe() == "nothing to reap");
    CHECK(report.problems.size() == 1);
}
