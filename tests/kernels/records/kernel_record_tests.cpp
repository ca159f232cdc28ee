// Kernel records (--state-dir): their JSON and its bad forms, the store on disk (a full disk
// included), and a kernel session adopting the process a record names.

#include "gateway/kernels/records/kernel_record.hpp"

#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fstream>
#include <optional>

#include <doctest/doctest.h>

#include "gateway/kernels/records/kernel_record_store.hpp"
#include "gateway/kernels/session/kernel_session.hpp"
#include "launcher/process/process_identity.hpp"
#include "tests/kernels/kernel_fakes.hpp"
#include "tests/support/temp_dir.hpp"

using namespace callisto::gateway::kernels;
using namespace callisto::gateway::kernels::test;
using callisto::kernelproto::channel;
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
    r.session = "5f0e2b8c-3d1a-4c2e-8f6b-9a7d1c0e4b21";
    return r;
}

// A scratch directory that may have a small tmpfs mounted on it (mount_full_disk).
struct temp_dir : callisto::test::temp_dir {
    ~temp_dir() { ::umount2(path().c_str(), MNT_DETACH); }
};

// The sample record as the fake world can adopt it: no sandbox, its runtime directory made.
kernel_record unsandboxed_record(const temp_dir& dir) {
    auto r = sample_record();
    r.uid.reset();
    r.runtime_dir = dir.path() / "run";
    fs::create_directories(r.runtime_dir);
    return r;
}

// A fake world whose sessions keep their records in a store of their own, under `dir`.
struct world_with_records {
    fake_world w;
    temp_dir dir;
    kernel_record_store store{dir.path() / "state", {}};

    world_with_records() { w.env.records = &store; }
};

// An 8 KiB tmpfs at dir with its state directory, then filled: the next record written there
// fails with ENOSPC. False (the test is skipped) without root.
bool mount_full_disk(const temp_dir& dir) {
    if (::geteuid() != 0 ||
        ::mount("callisto-test", dir.path().c_str(), "tmpfs", 0, "size=8k") != 0) {
        MESSAGE("skipped: mounting a small tmpfs needs root");
        return false;
    }
    std::error_code ec;
    fs::create_directories(dir.path() / "state", ec);  // made before the disk filled, as a store's
    std::ofstream filler(dir.path() / "filler");
    const std::string block(1024, 'x');
    for (int i = 0; i < 64 && filler; ++i) filler << block << std::flush;
    return true;
}

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
    CHECK(back.session == r.session);

    // A record written before the session was recorded reads back without one.
    auto older = r.to_json();
    older.erase("session");
    CHECK(kernel_record::from_json(older).session.empty());

    auto unsandboxed = r;
    unsandboxed.uid.reset();
    CHECK_FALSE(kernel_record::from_json(unsandboxed.to_json()).uid.has_value());

    // Without network the field is left out; with it, the rules come back for the listener
    // the next gateway opens again (issue 36).
    CHECK_FALSE(r.to_json().contains("egress_allow"));
    CHECK(back.egress_allow.empty());
    auto networked = r;
    networked.egress_allow = {"pypi.org", "127.0.0.2:8080"};
    CHECK(kernel_record::from_json(networked.to_json()).egress_allow == networked.egress_allow);
}

TEST_CASE("a kernel record names the kernel whose sandbox it shared, by the workdir") {
    auto r = sample_record();
    r.workdir = fs::path("/var/lib/callisto/work") / r.id;
    CHECK(r.sandbox_owner().empty());  // its own
    r.workdir = "/var/lib/callisto/work/4f2b1c9e-0000-4000-8000-000000000001";
    CHECK(r.sandbox_owner() == "4f2b1c9e-0000-4000-8000-000000000001");  // an E2B sibling's
    r.uid.reset();
    CHECK(r.sandbox_owner().empty());  // unsandboxed: no sandbox to share
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
    CHECK_THROWS_WITH_AS(kernel_record::from_json(with("session", 7)), "'session' is not a string",
                         std::invalid_argument);
    CHECK_THROWS_AS(kernel_record::from_json(nlohmann::json::array()), std::invalid_argument);
    CHECK_THROWS_WITH_AS(kernel_record::from_json(with("egress_allow", "pypi.org")),
                         "'egress_allow' is not an array", std::invalid_argument);
    for (auto bad : {nlohmann::json::array({7}), nlohmann::json::array({""}),
                     nlohmann::json::array({"pypi.org", nullptr})})
        CHECK_THROWS_WITH_AS(kernel_record::from_json(with("egress_allow", bad)),
                             "'egress_allow' holds a rule not a non-empty string",
                             std::invalid_argument);
}

TEST_CASE("the record store writes, reads back and removes records; a bad file is dropped") {
    temp_dir dir;
    kernel_record_store store(dir.path() / "state", {});
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
    if (!mount_full_disk(dir)) return;
    kernel_record_store store(dir.path() / "state", {});
    auto r = sample_record();
    const auto why = store.save(r);
    CHECK(why.find("No space left on device") != std::string::npos);
    CHECK(why.find("will not survive a gateway restart") != std::string::npos);
    CHECK(store.failed_writes() == 1);
    CHECK_FALSE(fs::exists(store.dir() / (r.id + ".json")));
    CHECK(fs::is_empty(store.dir()));  // no temporary file left behind

    fs::remove(dir.path() / "filler");
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

TEST_CASE_FIXTURE(world_with_records,
                  "an adopted kernel runs once its link answers, and its record follows it") {
    auto r = unsandboxed_record(dir);
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

TEST_CASE_FIXTURE(
    world_with_records,
    "an adopted kernel keeps its session; replies to requests from before reach their client") {
    auto r = unsandboxed_record(dir);
    w.processes.adoptable.insert(r.pid);

    auto k = std::make_shared<kernel_session>(w.env, r.id, fake_world::spec(), r.env, r.session);
    std::optional<std::string> ready;
    k->adopt(r, [&](kernel_outcome o) { ready = o.message; });
    REQUIRE(w.run_until([&] { return !w.links.opened.empty(); }));
    // The same routing identity as the gateway before: the kernel answers it.
    CHECK(w.links.options.back().session_id == r.session);
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return ready.has_value(); }));
    CHECK(store.load().records.at(0).session == r.session);

    // The reply to a cell a JupyterLab client sent before the restart, while no client is
    // here: it waits. A reply to the gateway's own request is nobody's.
    const auto lab_request = kp::make_message("execute_request", {{"code", "sleep"}}, "lab");
    auto lab_reply =
        kp::make_message("execute_reply", {{"status", "ok"}}, "kernel", "k", &lab_request);
    REQUIRE(kp::parse_routing_fields(lab_reply));
    const auto own_request = kp::make_message("kernel_info_request", {}, r.session);
    auto own_reply = kp::make_message("kernel_info_reply", {}, "kernel", "k", &own_request);
    REQUIRE(kp::parse_routing_fields(own_reply));
    w.links.last().on_message(channel::shell, lab_reply);
    w.links.last().on_message(channel::shell, own_reply);
    w.settle();

    auto stranger = std::make_shared<recording_client>();
    stranger->session = "someone-else";
    k->attach(stranger);
    auto lab = std::make_shared<recording_client>();
    lab->session = "lab";
    k->attach(lab);
    REQUIRE(w.run_until([&] { return !lab->got.empty(); }));
    CHECK(lab->got.size() == 1);
    CHECK(lab->got[0].first == channel::shell);
    CHECK(lab->got[0].second->msg_id == lab_reply.msg_id);
    CHECK(stranger->got.empty());

    // A later one goes straight to the client that showed that session in a message.
    auto anon = std::make_shared<recording_client>();
    k->attach(anon);
    k->submit(anon, channel::shell, kp::make_message("kernel_info_request", {}, "nb-2"));
    REQUIRE(w.run_until([&] { return w.links.count(channel::shell, "kernel_info_request") == 1; }));
    const auto nb_request = kp::make_message("execute_request", {{"code", "1"}}, "nb-2");
    auto nb_reply =
        kp::make_message("execute_reply", {{"status", "ok"}}, "kernel", "k", &nb_request);
    REQUIRE(kp::parse_routing_fields(nb_reply));
    w.links.last().on_message(channel::shell, nb_reply);
    REQUIRE(w.run_until([&] { return !anon->got.empty(); }));
    CHECK(anon->got[0].second->msg_id == nb_reply.msg_id);
    CHECK(lab->got.size() == 1);

    bool gone = false;
    k->shutdown([&] { gone = true; });
    w.processes.exit(r.pid, 0);
    REQUIRE(w.run_until([&] { return gone; }));
}

TEST_CASE(
    "--state-required: a kernel whose record cannot be written is stopped, its start refused") {
    fake_world w;
    temp_dir dir;
    if (!mount_full_disk(dir)) return;
    kernel_record_store store(dir.path() / "state", {});
    w.env.records = &store;
    w.env.settings.state_required = true;
    auto k =
        std::make_shared<kernel_session>(w.env, "5a1d9e2c-0000-4c3e-9a55-0d5d0e0c9a12",
                                         fake_world::spec(), std::map<std::string, std::string>{});
    std::optional<kernel_outcome> ready;
    k->start([&](kernel_outcome o) { ready = o; });
    REQUIRE(w.run_until([&] { return !w.links.opened.empty(); }));
    w.links.last().on_connected();
    // Asked to shut down, then terminated after --shutdown-wait.
    REQUIRE(w.run_until([&] { return w.links.count(channel::control, "shutdown_request") == 1; }));
    REQUIRE(w.run_until([&] { return !w.processes.terminations.empty(); }));
    w.processes.exit(w.processes.spawned.back().pid, 143);
    REQUIRE(w.run_until([&] { return ready.has_value(); }));
    CHECK_FALSE(ready->ok());
    INFO(ready->message);
    CHECK(ready->message.find("No space left on device") != std::string::npos);
    CHECK(ready->message.find("refused (--state-required)") != std::string::npos);
    CHECK(k->state() == kernel_state::dead);
    CHECK(fs::is_empty(store.dir()));

    // Without the flag the same kernel runs, unrecorded.
    w.env.settings.state_required = false;
    auto free_kernel =
        std::make_shared<kernel_session>(w.env, "5a1d9e2c-0000-4c3e-9a55-0d5d0e0c9a13",
                                         fake_world::spec(), std::map<std::string, std::string>{});
    std::optional<kernel_outcome> ran;
    free_kernel->start([&](kernel_outcome o) { ran = o; });
    REQUIRE(w.run_until([&] { return w.links.opened.size() == 2; }));
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return ran.has_value(); }));
    CHECK(ran->ok());
    CHECK(free_kernel->state() == kernel_state::running);
    bool gone = false;
    free_kernel->shutdown([&] { gone = true; });
    w.processes.exit(w.processes.spawned.back().pid, 0);
    REQUIRE(w.run_until([&] { return gone; }));
}

TEST_CASE_FIXTURE(world_with_records,
                  "a record whose process cannot be adopted ends the kernel as dead, saying why") {
    auto r = unsandboxed_record(dir);
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
    boxed.runtime_dir = dir.path() / "run2";
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
