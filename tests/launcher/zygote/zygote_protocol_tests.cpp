// The messages between the gateway and a zygote: what one side encodes the other decodes,
// and every malformed message is refused with a reason instead of crashing either side.

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "launcher/zygote/seqpacket.hpp"
#include "launcher/zygote/zygote_pool.hpp"
#include "launcher/zygote/zygote_protocol.hpp"
#include "tests/launcher/test_support.hpp"

using namespace callisto::launcher;
using callisto::launcher::test::temp_dir;
using callisto::launcher::test::write_file;
namespace proto = callisto::launcher::zygote_protocol;

namespace {

spawn_description sandboxed_spawn() {
    spawn_description what;
    what.argv = {"/usr/bin/bwrap", "--", "/usr/bin/python3", "-m", "ipykernel_launcher"};
    what.env = {{"HOME", "/work"}, {"PATH", "/usr/bin"}};
    what.uid = 60001;
    what.gid = 60001;
    what.rlimits = {{RLIMIT_NPROC, 256, 256}, {RLIMIT_CORE, 0, 0}};
    what.cgroup_procs_files = {"/sys/fs/cgroup/pids/callisto/k/cgroup.procs"};
    what.zygote = zygote_fork{
        "python3",
        {"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "/r/k.json"},
        "/r",
        sandbox_layout{
            "/w/k", "/r", "/r/passwd", "/r/group", 1 << 20, {"/opt/envs/ds", "/tmp/py312"}}};
    return what;
}

std::string fork_with(const std::string& field, const std::string& value) {
    auto j = nlohmann::json::parse(proto::encode_fork(1, sandboxed_spawn()));
    j[field] = nlohmann::json::parse(value);
    return j.dump();
}

}  // namespace

TEST_CASE("a fork order carries the unwrapped command, identity, limits and layout") {
    const auto order =
        std::get<proto::fork_order>(proto::decode_order(proto::encode_fork(42, sandboxed_spawn())));
    CHECK(order.id == 42);
    CHECK(order.argv.at(2) == "ipykernel_launcher");  // not bwrap's command line
    CHECK(order.uid == 60001u);
    CHECK(order.gid == 60001u);
    REQUIRE(order.rlimits.size() == 2);
    CHECK(order.rlimits[0].resource == RLIMIT_NPROC);
    CHECK(order.rlimits[0].soft == 256);
    CHECK(order.cgroup_procs_files.at(0) == "/sys/fs/cgroup/pids/callisto/k/cgroup.procs");
    REQUIRE(order.layout);
    CHECK(order.layout->workdir == "/w/k");
    CHECK(order.layout->tmp_bytes == 1 << 20);
    CHECK(order.layout->environment ==
          std::vector<std::filesystem::path>{"/opt/envs/ds", "/tmp/py312"});
}

TEST_CASE("an unsandboxed fork order has no identity and no layout") {
    auto what = sandboxed_spawn();
    what.uid.reset();
    what.gid.reset();
    what.zygote->layout.reset();
    const auto order =
        std::get<proto::fork_order>(proto::decode_order(proto::encode_fork(1, what)));
    CHECK_FALSE(order.uid);
    CHECK_FALSE(order.layout);
    CHECK(order.cwd == "/r");
}

TEST_CASE("encoding a fork refuses a spawn that no zygote may fork") {
    spawn_description what;
    what.argv = {"/bin/true"};
    CHECK_THROWS_AS(proto::encode_fork(1, what), std::invalid_argument);
}

TEST_CASE("the environment travels beside a fork order, never inside it") {
    const auto what = sandboxed_spawn();
    const auto text = proto::encode_fork(1, what);
    CHECK(text.find("/work") == std::string::npos);  // HOME's value is not in the order
    const auto env = proto::decode_environment(proto::encode_environment(what.env));
    CHECK(env == what.env);
    CHECK_THROWS_AS(proto::decode_environment(R"({"A":1})"), std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_environment("[]"), std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_environment("{"), std::invalid_argument);
}

TEST_CASE("signal and terminate orders round-trip") {
    const auto sig = std::get<proto::signal_order>(
        proto::decode_order(proto::encode(proto::signal_order{123, SIGINT})));
    CHECK(sig.pid == 123);
    CHECK(sig.signal == SIGINT);
    const auto term = std::get<proto::terminate_order>(
        proto::decode_order(proto::encode(proto::terminate_order{77, 3000})));
    CHECK(term.pid == 77);
    CHECK(term.grace_ms == 3000);
}

TEST_CASE("malformed orders are refused with the field named") {
    auto refused = [](const std::string& text, const std::string& why) {
        INFO(text);
        try {
            proto::decode_order(text);
            FAIL("accepted");
        } catch (const std::invalid_argument& e) {
            CHECK(std::string(e.what()).find(why) != std::string::npos);
        }
    };
    refused("", "not valid JSON");
    refused("[1]", "not an object");
    refused(std::string(5000, '[') + std::string(5000, ']'), "nested deeper");
    refused(R"({"op":"fly"})", "unknown op");
    refused(R"({"pid":1})", "'op' is missing");
    refused(R"({"op":"signal","pid":-4,"signal":9})", "'pid' must be positive");
    refused(R"({"op":"signal","pid":"1","signal":9})", "'pid' is not a whole number");
    refused(R"({"op":"terminate","pid":1,"grace_ms":-1})", "out of range");
    refused(fork_with("argv", "[]"), "'argv' is empty");
    refused(fork_with("argv", "[1]"), "non-string");
    refused(fork_with("uid", "-1"), "'uid' is out of range");
    refused(fork_with("uid", "4294967296"), "'uid' is out of range");
    refused(fork_with("rlimits", "[[1,2]]"), "[resource, soft, hard]");
    refused(fork_with("layout", R"({"workdir":"relative","runtime_dir":"/r",
        "passwd_file":"/p","group_file":"/g","tmp_bytes":1})"),
            "not an absolute path");
    refused(fork_with("layout", R"({"workdir":"/w"})"), "'runtime_dir' must be a string");
    refused(fork_with("layout", R"({"workdir":"/w","runtime_dir":"/r","passwd_file":"/p",
        "group_file":"/g","tmp_bytes":-5})"),
            "'tmp_bytes' must be a whole number");
    // Each environment path is bound at <new root>/<path>: nothing relative, nothing that
    // climbs out, not the root itself.
    auto with_environment = [](const std::string& list) {
        auto j = nlohmann::json::parse(proto::encode_fork(1, sandboxed_spawn()));
        j["layout"]["environment"] = nlohmann::json::parse(list);
        return j.dump();
    };
    CHECK_NOTHROW(proto::decode_order(with_environment("[]")));
    refused(with_environment(R"("/opt/envs/ds")"), "'environment' must be a list of strings");
    refused(with_environment("[1]"), "'environment' must be a list of strings");
    for (const char* bad :
         {R"(["opt/envs"])", R"(["/opt/../etc"])", R"(["/"])", R"(["/opt/envs/"])",
          R"(["/opt/./envs"])", R"(["//opt"])", R"(["/opt/e\u0000x"])", R"([""])"})
        refused(with_environment(bad), "is not an absolute, normal path below /");
}

TEST_CASE("events round-trip and malformed ones are refused") {
    proto::ready_event ready{"3.11.2", {"numpy"}, {{"torch", "ModuleNotFoundError"}}, 1.5, 3890};
    const auto back = std::get<proto::ready_event>(proto::decode_event(proto::encode(ready)));
    CHECK(back.python == "3.11.2");
    CHECK(back.prefaulted_pages == 3890);
    CHECK(back.preloaded == std::vector<std::string>{"numpy"});
    CHECK(back.failed.at("torch") == "ModuleNotFoundError");
    CHECK(back.seconds == doctest::Approx(1.5));

    const auto forked = std::get<proto::forked_event>(
        proto::decode_event(proto::encode(proto::forked_event{9, 4321})));
    CHECK(forked.id == 9);
    CHECK(forked.pid == 4321);
    const auto failed = std::get<proto::fork_failed_event>(
        proto::decode_event(proto::encode(proto::fork_failed_event{9, "mount /usr: EPERM"})));
    CHECK(failed.error == "mount /usr: EPERM");
    const auto exited = std::get<proto::exited_event>(
        proto::decode_event(proto::encode(proto::exited_event{4321, 0x0900})));
    CHECK(exited.status == 0x0900);

    CHECK_THROWS_AS(proto::decode_event(R"({"event":"forked","id":1,"pid":0})"),
                    std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_event(R"({"event":"exited","pid":1})"), std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_event(R"({"event":"ready","python":"3"})"),
                    std::invalid_argument);
    const std::string ready_but = R"({"event":"ready","python":"3","preloaded":[],"failed":{},)"
                                  R"("seconds":1,"prefaulted_pages":)";
    CHECK_NOTHROW(proto::decode_event(ready_but + "0}"));
    CHECK_THROWS_AS(proto::decode_event(ready_but + "-1}"), std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_event(ready_but + "\"many\"}"), std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_event(ready_but + "1.5}"), std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_event(ready_but.substr(0, ready_but.rfind(',')) + "}"),
                    std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_event(R"({"event":"boom"})"), std::invalid_argument);
    CHECK_THROWS_AS(proto::decode_event("{"), std::invalid_argument);
}

TEST_CASE("seqpacket messages arrive whole, with the descriptors passed beside them") {
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
    callisto::unique_fd a(pair[0]), b(pair[1]);
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    callisto::unique_fd pipe_read(pipe_fds[0]), pipe_write(pipe_fds[1]);

    const int passed[] = {pipe_read.get(), pipe_write.get()};
    REQUIRE(send_seqpacket(a.get(), "first", passed));
    REQUIRE(send_seqpacket(a.get(), std::string(100000, 'x')));
    auto first = receive_seqpacket(b.get());
    REQUIRE(first);
    CHECK(first->bytes == "first");
    REQUIRE(first->fds.size() == 2);
    CHECK(first->fds[1].get() != pipe_write.get());
    CHECK(::write(first->fds[1].get(), "z", 1) == 1);  // the same pipe, through the copies
    char c = 0;
    CHECK(::read(first->fds[0].get(), &c, 1) == 1);
    CHECK(c == 'z');
    auto second = receive_seqpacket(b.get());
    REQUIRE(second);
    CHECK(second->bytes.size() == 100000);
    CHECK(second->fds.empty());

    CHECK_FALSE(send_seqpacket(a.get(), std::string(max_seqpacket_message + 1, 'x')));
    CHECK(errno == EMSGSIZE);
    const int too_many[] = {0, 1, 2, 0, 1};
    CHECK_FALSE(send_seqpacket(a.get(), "x", too_many));
    CHECK(errno == EMSGSIZE);
    a.reset();
    CHECK_FALSE(receive_seqpacket(b.get()));  // end of stream
}

TEST_CASE("only `python -m module` kernelspecs run by the zygote's own python are forked") {
    kernelspec spec;
    spec.name = "python3";
    spec.language = "python";
    spec.argv = {"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"};
    const auto python = zygote_pool::built_python();
    CHECK(zygote_pool::why_not_eligible(spec, python) == "");

    auto other = spec;
    other.argv[0] = "/bin/sh";
    CHECK(zygote_pool::why_not_eligible(other, python).find("it runs /bin/sh") !=
          std::string::npos);
    other = spec;
    other.argv = {"/usr/bin/python3", "kernel.py", "-f", "{connection_file}"};
    CHECK(zygote_pool::why_not_eligible(other, python).find("python -m module") !=
          std::string::npos);
    other = spec;
    other.metadata = {{"callisto", {{"zygote", false}}}};
    CHECK(zygote_pool::why_not_eligible(other, python).find("opts out") != std::string::npos);
}

TEST_CASE(
    "a venv made from the zygote's Python is forked by a zygote started as the venv's "
    "interpreter; another interpreter is not") {
    temp_dir tmp;
    const auto python = zygote_pool::built_python();
    kernelspec spec;
    spec.name = "ds";
    spec.language = "python";
    const auto venv = tmp.path() / "ds" / "bin" / "python3";
    std::filesystem::create_directories(venv.parent_path());
    std::filesystem::create_symlink(python, venv);
    write_file(tmp.path() / "ds" / "pyvenv.cfg",
               "home = " + python.parent_path().string() +
                   "\nexecutable = " + std::filesystem::canonical(python).string() + "\n");
    spec.argv = {venv.string(), "-m", "ipykernel_launcher", "-f", "{connection_file}"};
    CHECK(zygote_pool::why_not_eligible(spec, python) == "");
    // Started as the system Python, the zygote's kernels would have the system's sys.path,
    // without the venv's packages.
    CHECK(zygote_pool::program_for(spec, python) == venv);

    // A conda-like prefix: an interpreter of its own (a copy), whose extension modules and
    // standard library the embedded Python cannot use.
    const auto conda = tmp.path() / "conda" / "bin" / "python3";
    std::filesystem::create_directories(conda.parent_path());
    std::filesystem::copy_file(python, conda);
    spec.argv[0] = conda.string();
    CHECK(zygote_pool::why_not_eligible(spec, python)
              .find("it runs " + conda.string() + " (" + conda.string() +
                    "), and the zygote embeds ") == 0);
    CHECK(zygote_pool::program_for(spec, python) == python);

    spec.argv[0] = (tmp.path() / "gone" / "bin" / "python3").string();
    CHECK(zygote_pool::why_not_eligible(spec, python).find("its interpreter: ") == 0);
    CHECK(zygote_pool::program_for(spec, python) == python);
    spec.argv[0] = "/usr/bin/python3";
    CHECK(zygote_pool::program_for(spec, python) == python);
}

TEST_CASE("preloads come from the kernelspec, else the data stack for Python") {
    kernelspec spec;
    spec.language = "python";
    CHECK(zygote_pool::preloads(spec) ==
          std::vector<std::string>{"numpy", "pandas", "matplotlib", "matplotlib.pyplot"});
    spec.metadata = {{"callisto", {{"preload", {"scipy", 3, "sklearn"}}}}};
    CHECK(zygote_pool::preloads(spec) == std::vector<std::string>{"scipy", "sklearn"});
    spec.metadata = nlohmann::json::object();
    spec.language = "R";
    CHECK(zygote_pool::preloads(spec).empty());
}
