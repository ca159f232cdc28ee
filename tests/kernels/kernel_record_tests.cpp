// Kernel records (--state-dir): their JSON and its bad forms, the store on disk (a full disk
// included), and a kernel session adopting the process a record names.

#include "gateway/kernels/kernel_record.hpp"

#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fstream>
#include <optional>

#include <doctest/doctest.h>

#include "gateway/kernels/kernel_record_store.hpp"
#include "gateway/kernels/kernel_session.hpp"
#include "kernel_fakes.hpp"
#include "launcher/process_identity.hpp"

using namespace callisto::gateway::kernels;
using namespace callisto::gateway::kernels::test;
namespace fs = std::filesystem;

namespace {

kernel_record sample_record() {
    kernel_record r;
    r.id = "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11";
    r.kernelspec = "python3";
    r.owner = "ana";
    r.env = {{"KERNEL_PURPOSE", "tests"}};
    r.pid = ::getpid();
    r.start_ticks = callisto::launcher::process_start_ticks(::getpid()).value();
    r.forked = true;
    r.runtime_dir = "/tmp/callisto-1/0b7c2a2e-abcdef";
    r.connection.transport = "ipc";
    r.connection.ip = "/tmp/callisto-1/0b7c2a2e-abcdef/k";
    r.connection.shell_port = 1;
    r.connection.iopub_port = 2;
    r.connection.stdin_port = 3;
    r.connection.control_port = 4;
    r.connection.hb_port = 5;
    r.connection.key = "secret";
    r.connection.kernel_name = "python3";
    r.uid = 60007;
    r.cgroup = "1a2b3c4d-0b7c2a2e-abcdef";
    r.workdir = "/var/lib/callisto/work/0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11";
    return r;
}

struct temp_dir {
    fs::path path =
        fs::temp_directory_path() / ("callisto-records-test-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    temp_dir() { fs::create_directories(path); }
    ~temp_dir() {
        ::umount2(path.c_str(), MNT_DETACH);
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

TEST_CASE("a kernel record reads back as it was written") {
    const auto r = sample_record();
    const auto back = kernel_record::from_json(r.to_json());
    CHECK(back.id == r.id);
    CHECK(back.owner == "ana");
    CHECK(back.env == r.env);
    CHECK(back.pid == r.pid);
    CHECK(back.start_ticks == r.start_ticks);
    CHECK(back.forked);
    CHECK(back.connection.key == "secret");
    CHECK(back.connection.ip == r.connection.ip);
    CHECK(back.uid == r.uid);
    CHECK(back.cgroup == r.cgroup);
    CHECK(back.workdir == r.workdir);

    auto unsandboxed = r;
    unsandboxed.uid.reset();
    CHECK_FALSE(kernel_record::from_json(unsandboxed.to_json()).uid.has_value());
}

TEST_CASE("a kernel record in a bad form is refused, saying what is wrong") {
    auto with = [](const char* field, nlohmann::json value) {
        auto j = sample_record().to_json();
        if (value.is_discarded())
            j.erase(field);
        else
            j[field] = std::move(value);
        return j;
    };
    const auto missing = nlohmann::json(nlohmann::json::value_t::discarded);
    CHECK_THROWS_WITH_AS(kernel_record::from_json(with("owner", missing)), "no 'owner'",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(kernel_record::from_json(with("pid", 1)), "'pid' is not a process of ours",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(kernel_record::from_json(with("pid", -5)), "'pid' is not a whole number",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(kernel_record::from_json(with("forked", "yes")),
                         "'forked' is not a boolean", std::invalid_argument);
    CHECK_THROWS_WITH_AS(kernel_record::from_json(with("env", {{"A", 1}})),
                         "'env' holds a value not a string", std::invalid_argument);
    CHECK_THROWS_AS(kernel_record::from_json(with("connection", "tcp")), std::invalid_argument);
    CHECK_THROWS_AS(kernel_record::from_json(with("uid", "60007")), std::invalid_argument);
    CHECK_THROWS_AS(kernel_record::from_json(nlohmann::json::array()), std::invalid_argument);
}

TEST_CASE("the record store writes, reads back and removes records; a bad file is dropped") {
    temp_dir dir;
    kernel_record_store store(dir.path / "state", {});
    CHECK((fs::status(store.dir()).permissions() & fs::perms::all) == fs::perms::owner_all);
    const auto r = sample_record();
    CHECK(store.save(r) == "");
    const auto file = store.dir() / (r.id + ".json");
    CHECK((fs::status(file).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write));
    {
        std::ofstream(store.dir() / "1111aaaa-0000-0000-0000-000000000000.json") << "{\"id\": ";
        std::ofstream(store.dir() / "notes.txt") << "not a record";
    }
    auto loaded = store.load();
    REQUIRE(loaded.records.size() == 1);
    CHECK(loaded.records[0].connection.key == "secret");
    REQUIRE(loaded.problems.size() == 1);
    CHECK(loaded.problems[0].find("1111aaaa") != std::string::npos);
    CHECK_FALSE(fs::exists(store.dir() / "1111aaaa-0000-0000-0000-000000000000.json"));
    CHECK(fs::exists(store.dir() / "notes.txt"));  // not a record: not ours to remove

    auto bad = r;
    bad.id = "../escape";
    CHECK(store.save(bad).find("not a kernel id") == 0);
    store.remove(r.id);
    CHECK_FALSE(fs::exists(file));
    store.remove(r.id);  // twice: no harm
    CHECK(store.load().records.empty());
}

TEST_CASE("a full disk under the store is an error for that kernel, and writes resume after") {
    temp_dir dir;
    if (::geteuid() != 0 ||
        ::mount("callisto-test", dir.path.c_str(), "tmpfs", 0, "size=8k") != 0) {
        MESSAGE("skipped: mounting a small tmpfs needs root");
        return;
    }
    kernel_record_store store(dir.path / "state", {});
    {
        std::ofstream filler(dir.path / "filler");
        const std::string block(1024, 'x');
        for (int i = 0; i < 64 && filler; ++i) filler << block << std::flush;
    }
    auto r = sample_record();
    const auto why = store.save(r);
    CHECK(why.find("No space left on device") != std::string::npos);
    CHECK(why.find("will not survive a gateway restart") != std::string::npos);
    CHECK(store.failed_writes() == 1);
    CHECK_FALSE(fs::exists(store.dir() / (r.id + ".json")));
    CHECK(fs::is_empty(store.dir()));  // no temporary file left behind

    fs::remove(dir.path / "filler");
    CHECK(store.save(r) == "");
    CHECK(store.load().records.size() == 1);
}

TEST_CASE("a record names its process only while pid, start time and uid still match") {
    auto r = sample_record();
    r.uid = ::getuid();
    CHECK(kernel_record_store::still_running(r) == "");
    auto reused = r;
    reused.start_ticks += 1;
    CHECK(kernel_record_store::still_running(reused).find("is another process now") !=
          std::string::npos);
    auto other_uid = r;
    other_uid.uid = ::getuid() + 1;
    CHECK(kernel_record_store::still_running(other_uid).find("no longer runs as uid") !=
          std::string::npos);

    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    REQUIRE(child > 0);
    ::waitpid(child, nullptr, 0);
    auto gone = r;
    gone.pid = child;
    CHECK(kernel_record_store::still_running(gone).find("has exited") != std::string::npos);
}

TEST_CASE("an adopted kernel runs once its link answers, and its record follows it") {
    fake_world w;
    temp_dir dir;
    kernel_record_store store(dir.path / "state", {});
    w.env.records = &store;
    auto r = sample_record();
    r.uid.reset();  // the fake world has no sandbox
    r.runtime_dir = dir.path / "run";
    fs::create_directories(r.runtime_dir);
    w.processes.adoptable.insert(r.pid);

    auto k = std::make_shared<kernel_session>(w.env, r.id, fake_world::spec(), r.env);
    std::optional<std::string> ready;
    k->adopt(r, [&](kernel_outcome o) { ready = o.message; });
    REQUIRE(w.run_until([&] { return !w.links.opened.empty(); }));
    CHECK(w.processes.spawned.empty());  // nothing new was started
    CHECK(k->state() == kernel_state::starting);
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return ready.has_value(); }));
    CHECK(*ready == "");
    CHECK(k->state() == kernel_state::running);
    CHECK(k->owner() == "ana");
    CHECK(k->model(kernel_process_view::shown)["callisto"]["pid"] == r.pid);

    auto loaded = store.load();
    REQUIRE(loaded.records.size() == 1);
    CHECK(loaded.records[0].owner == "ana");
    CHECK(loaded.records[0].connection.key == "secret");

    k->assign_owner("bo");
    REQUIRE(w.run_until([&] { return store.load().records.at(0).owner == "bo"; }));

    bool gone = false;
    k->shutdown([&] { gone = true; });
    w.processes.exit(r.pid, 0);
    REQUIRE(w.run_until([&] { return gone; }));
    CHECK(store.load().records.empty());
    CHECK_FALSE(fs::exists(r.runtime_dir));  // taken over, so removed with the kernel
}

TEST_CASE("a record whose process cannot be adopted ends the kernel as dead, saying why") {
    fake_world w;
    temp_dir dir;
    kernel_record_store store(dir.path / "state", {});
    w.env.records = &store;
    auto r = sample_record();
    r.uid.reset();
    r.runtime_dir = dir.path / "run";
    fs::create_directories(r.runtime_dir);
    CHECK(store.save(r) == "");
    // not in w.processes.adoptable: the supervisor finds it gone

    auto k = std::make_shared<kernel_session>(w.env, r.id, fake_world::spec(), r.env);
    std::optional<kernel_outcome> ready;
    k->adopt(r, [&](kernel_outcome o) { ready = o; });
    REQUIRE(w.run_until([&] { return ready.has_value(); }));
    CHECK_FALSE(ready->ok());
    CHECK(ready->message.find("cannot adopt kernel " + r.id + ": it has exited") == 0);
    CHECK(k->state() == kernel_state::dead);
    CHECK(w.links.opened.empty());
    CHECK(store.load().records.empty());

    // A record saying "sandboxed" where the sandbox is off now is not adopted either.
    auto boxed = sample_record();
    boxed.runtime_dir = dir.path / "run2";
    fs::create_directories(boxed.runtime_dir);
    w.processes.adoptable.insert(boxed.pid);
    auto k2 = std::make_shared<kernel_session>(w.env, boxed.id, fake_world::spec(), boxed.env);
    std::optional<kernel_outcome> ready2;
    k2->adopt(boxed, [&](kernel_outcome o) { ready2 = o; });
    REQUIRE(w.run_until([&] { return ready2.has_value(); }));
    CHECK(ready2->message.find("it is sandboxed and the sandbox is off now") != std::string::npos);
}

TEST_CASE("a record's numbers must fit what they name") {
    auto j = sample_record().to_json();
    j["pid"] = 1ULL << 40;
    CHECK_THROWS_WITH_AS(kernel_record::from_json(j), "'pid' is not a whole number",
                         std::invalid_argument);
    j = sample_record().to_json();
    j["uid"] = 1.5;
    CHECK_THROWS_WITH_AS(kernel_record::from_json(j), "'uid' is not a whole number",
                         std::invalid_argument);
}
