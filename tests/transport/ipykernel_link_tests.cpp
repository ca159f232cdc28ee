// The reactor against a real ipykernel process over the ipc transport.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelproto/connection_info.hpp"
#include "kernelproto/ids.hpp"
#include "tests/transport/event_recorder.hpp"
#include "tests/transport/test_support.hpp"
#include "transport/reactor.hpp"

extern char** environ;

namespace kp = callisto::kernelproto;
using callisto::logger;
using callisto::transport::link_id;
using callisto::transport::reactor;
using callisto::transport::testing::event_recorder;
using callisto::transport::testing::recorded_events;
using callisto::transport::testing::temp_dir;

namespace {

// Starts `python3 -m ipykernel_launcher -f <file>` and kills it when done.
class kernel_process {
public:
    kernel_process(const std::string& connection_file, const std::string& log_file) {
        std::vector<std::string> args = {CALLISTO_TEST_PYTHON, "-m", "ipykernel_launcher", "-f",
                                         connection_file};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        // The kernel's banner and warnings go to a file, not into the test report.
        posix_spawn_file_actions_t actions;
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawn_file_actions_addopen(&actions, 1, log_file.c_str(),
                                           O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
        int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
        ::posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) pid_ = -1;
    }
    ~kernel_process() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    kernel_process(const kernel_process&) = delete;
    kernel_process& operator=(const kernel_process&) = delete;

    bool started() const { return pid_ > 0; }

private:
    pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("a real ipykernel connects and runs print('hi')") {
    temp_dir dir;
    kp::connection_info info;
    info.transport = "ipc";
    info.ip = dir.path().string() + "/k";
    info.shell_port = 1;
    info.iopub_port = 2;
    info.stdin_port = 3;
    info.control_port = 4;
    info.hb_port = 5;
    info.key = kp::random_hex(32);
    info.kernel_name = "python3";
    std::string file = dir.path().string() + "/kernel.json";
    std::ofstream(file) << info.to_json().dump(2);

    kernel_process kernel(file, dir.path().string() + "/kernel.log");
    REQUIRE(kernel.started());

    reactor r{logger()};
    auto events = std::make_shared<event_recorder>();
    link_id id = r.open(info, events);
    // Python start-up on a shared machine can be slow.
    REQUIRE(events->wait_for([](const recorded_events& e) { return e.connected == 1; },
                             std::chrono::seconds(60)));

    kp::message req = kp::make_message("execute_request",
                                       {{"code", "print('hi')"},
                                        {"silent", false},
                                        {"store_history", true},
                                        {"user_expressions", nlohmann::json::object()},
                                        {"allow_stdin", false},
                                        {"stop_on_error", true}},
                                       "test-session", "tester");
    r.send(id, kp::channel::shell, req);
    auto saw_hi = [&](const recorded_events& e) {
        for (const auto& [ch, msg] : e.messages) {
            if (ch == kp::channel::iopub && msg.msg_type == "stream" &&
                msg.parent_msg_id == req.msg_id &&
                nlohmann::json::parse(msg.content).value("text", "") == "hi\n")
                return true;
        }
        return false;
    };
    REQUIRE(events->wait_for([&](const recorded_events& e) {
        return saw_hi(e) && e.count(kp::channel::shell, "execute_reply", req.msg_id) == 1;
    }));
    auto e = events->snapshot();
    CHECK(e.bad.empty());
    CHECK(e.count(kp::channel::shell, "kernel_info_reply") == 0);  // nudges swallowed
    for (const auto& [ch, msg] : e.messages) {
        if (msg.msg_type == "execute_reply")
            CHECK(nlohmann::json::parse(msg.content).at("status") == "ok");
    }
    r.stop();
}
