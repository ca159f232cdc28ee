// A kernel session and the warm pool driven through fake ports: no kernel, process or socket.

#include "gateway/kernels/session/kernel_session.hpp"

#include <fstream>
#include <map>
#include <optional>

#include <doctest/doctest.h>

#include "gateway/kernels/lifecycle/warm_pool.hpp"
#include "launcher/kernelspec/kernelspec_catalog.hpp"
#include "tests/kernels/kernel_fakes.hpp"

using namespace callisto::gateway::kernels;
using namespace callisto::gateway::kernels::test;
using callisto::kernelproto::channel;

namespace {

std::shared_ptr<kernel_session> make_session(fake_world& w, std::string id = "k-1") {
    return std::make_shared<kernel_session>(w.env, std::move(id), fake_world::spec(),
                                            std::map<std::string, std::string>{});
}

// Starts the session and connects its link; the start's answer.
std::string start_and_connect(fake_world& w, kernel_session& k) {
    std::optional<std::string> ready;
    k.start([&](kernel_outcome r) { ready = r.message; });
    REQUIRE(w.run_until([&] { return !w.links.opened.empty(); }));
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return ready.has_value(); }));
    return *ready;
}

// Starts the session, whose process says `last_words` once spawned and exits with code 1
// before it answers; the start's outcome.
kernel_outcome start_dying(fake_world& w, kernel_session& k, const std::string& last_words) {
    std::optional<kernel_outcome> started;
    k.start([&](kernel_outcome r) { started = r; });
    REQUIRE(w.run_until([&] { return w.processes.spawned.size() == 1; }));
    w.processes.say(1000, last_words);
    w.processes.exit(1000, 1);
    REQUIRE(w.run_until([&] { return started.has_value(); }));
    return *started;
}

kp::message request(std::string type, nlohmann::json content = nlohmann::json::object()) {
    return kp::make_message(std::move(type), std::move(content), "client-session");
}

// Sends `req` from `client` on `ch` and runs until the kernel has it; the request's msg_id.
std::string submit_and_await(fake_world& w, kernel_session& k,
                             const std::shared_ptr<kernel_client>& client, channel ch,
                             kp::message req) {
    const std::string id = req.msg_id;
    const std::string type = req.msg_type;
    const std::size_t sent_before = w.links.count(ch, type);
    k.submit(client, ch, std::move(req));
    REQUIRE(w.run_until([&] { return w.links.count(ch, type) == sent_before + 1; }));
    return id;
}

// A session whose kernel runs, with one of the gateway's own clients attached.
struct running_session {
    fake_world w;
    std::shared_ptr<kernel_session> k = make_session(w);
    std::shared_ptr<recording_client> client = std::make_shared<recording_client>();

    running_session() {
        REQUIRE(start_and_connect(w, *k) == "");
        k->attach(client);
    }
};

// A session whose kernel runs, with a WebSocket client attached and its executions recorded
// (as the audit log does).
struct audited_session {
    fake_world w;
    recording_observer observer;  // before the session, which reports to it until it goes
    std::shared_ptr<kernel_session> k;
    std::shared_ptr<websocket_client> client = std::make_shared<websocket_client>();

    audited_session() {
        w.env.executions = &observer;
        k = make_session(w);
        REQUIRE(start_and_connect(w, *k) == "");
        k->attach(client);
    }
};

}  // namespace

TEST_CASE_FIXTURE(running_session,
                  "a kernel session is running once its link connects, and forwards client "
                  "requests") {
    CHECK(w.processes.spawned.size() == 1);
    CHECK(k->state() == kernel_state::running);
    CHECK(k->model()["execution_state"] == "idle");

    const std::string id =
        submit_and_await(w, *k, client, channel::shell, request("execute_request"));
    // The reply goes back to the client that asked, iopub to every client.
    w.links.last().on_message(channel::shell, from_kernel("execute_reply", {{"status", "ok"}}, id));
    w.links.last().on_message(channel::iopub,
                              from_kernel("status", {{"execution_state", "busy"}}, id));
    REQUIRE(w.run_until([&] { return client->got.size() == 2; }));
    CHECK(client->got[0].first == channel::shell);
    CHECK(k->model()["execution_state"] == "busy");
    CHECK(k->model()["connections"] == 1);
}

TEST_CASE("a link that connects before open() returns still starts the kernel") {
    // Seen as a POST /api/kernels left unanswered: the reactor reported the connection before
    // the session had learnt the link's id, and the session took it for a stale link's.
    fake_world w;
    w.links.connect_before_open_returns = true;
    auto k = make_session(w);
    std::optional<std::string> ready;
    k->start([&](kernel_outcome r) { ready = r.message; });
    REQUIRE(w.run_until([&] { return ready.has_value(); }));
    CHECK(*ready == "");
    CHECK(k->state() == kernel_state::running);
}

TEST_CASE("a restart asked while the kernel is still starting waits for that start") {
    fake_world w;
    auto k = make_session(w);
    std::optional<std::string> started, restarted;
    k->start([&](kernel_outcome r) { started = r.message; });
    REQUIRE(w.run_until([&] { return !w.links.opened.empty(); }));
    k->restart([&](kernel_outcome r) { restarted = r.message; });
    w.settle();  // nothing answers yet: both wait
    CHECK_FALSE(started);
    CHECK_FALSE(restarted);
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return started && restarted; }));
    CHECK(*started == "");
    CHECK(*restarted == "");
    CHECK(w.processes.spawned.size() == 1);  // one process: the restart did not start another
    CHECK(k->state() == kernel_state::running);
}

TEST_CASE_FIXTURE(
    running_session,
    "a shutdown asks the kernel, then terminates it after shutdown_wait, then closes clients") {
    bool done = false;
    k->shutdown([&] { done = true; }, "deleted by its owner");
    // shutdown_request on control first; the kernel does not exit, so SIGTERM (with SIGKILL
    // kill_grace later) follows once shutdown_wait has passed.
    REQUIRE(w.run_until([&] { return !w.processes.terminations.empty(); }));
    CHECK(w.links.count(channel::control, "shutdown_request") == 1);
    CHECK(w.processes.terminations[0] == std::pair{pid_t{1000}, std::chrono::milliseconds(3000)});
    CHECK_FALSE(done);
    CHECK(k->state() == kernel_state::shutting_down);
    w.processes.exit(1000, 0);
    REQUIRE(w.run_until([&] { return done; }));
    CHECK(k->state() == kernel_state::gone);
    CHECK(client->closed_because == std::vector<std::string>{"deleted by its owner"});
    CHECK(w.links.closed == std::vector<callisto::transport::link_id>{1});
    CHECK(client->statuses().back() == "dead");
}

TEST_CASE(
    "where nothing outlives a kernel, a shutdown terminates it at once; a restart still asks") {
    fake_world w;
    w.env.settings.ask_before_removing = false;  // as for sandboxed kernels
    auto k = make_session(w);
    REQUIRE(start_and_connect(w, *k) == "");

    std::optional<std::string> restarted;
    k->restart([&](kernel_outcome r) { restarted = r.message; });
    REQUIRE(w.run_until([&] { return w.links.count(channel::control, "shutdown_request") == 1; }));
    w.settle();
    CHECK(w.processes.terminations.empty());  // shutdown_wait has not passed
    w.processes.exit(1000, 0);
    REQUIRE(w.run_until([&] { return w.links.opened.size() == 2; }));
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return restarted.has_value(); }));

    auto client = std::make_shared<recording_client>();
    k->attach(client);
    bool done = false;
    k->shutdown([&] { done = true; }, "deleted by its owner");
    REQUIRE(w.run_until([&] { return !w.processes.terminations.empty(); }));
    CHECK(w.links.count(channel::control, "shutdown_request") == 1);  // the restart's only
    CHECK(w.processes.terminations[0] == std::pair{pid_t{1001}, std::chrono::milliseconds(3000)});
    w.processes.exit(1001, 0);
    REQUIRE(w.run_until([&] { return done; }));
    CHECK(k->state() == kernel_state::gone);
    CHECK(client->closed_because == std::vector<std::string>{"deleted by its owner"});
    CHECK(client->statuses().back() == "dead");
}

TEST_CASE("a renewal asks nothing of the old process: SIGTERM at once, then a new process") {
    fake_world w;
    auto k = make_session(w);
    REQUIRE(start_and_connect(w, *k) == "");
    std::optional<std::string> renewed;
    k->renew([&](kernel_outcome r) { renewed = r.message; });
    REQUIRE(w.run_until([&] { return !w.processes.terminations.empty(); }));
    CHECK(w.links.count(channel::control, "shutdown_request") == 0);
    CHECK(w.processes.terminations[0].first == 1000);
    w.processes.exit(1000, 0);
    REQUIRE(w.run_until([&] { return w.links.opened.size() == 2; }));
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return renewed.has_value(); }));
    CHECK(*renewed == "");
    CHECK(w.processes.spawned.size() == 2);
    CHECK(k->state() == kernel_state::running);
    CHECK(w.metrics.restarts.with({"reset"}).value() == 1);  // not counted as asked for
    CHECK(w.metrics.restarts.with({"requested"}).value() == 0);
}

TEST_CASE("a kernel that exits after shutdown_request is not terminated") {
    fake_world w;
    auto k = make_session(w);
    REQUIRE(start_and_connect(w, *k) == "");
    bool done = false;
    k->shutdown([&] { done = true; });
    REQUIRE(w.run_until([&] { return w.links.count(channel::control, "shutdown_request") == 1; }));
    w.processes.exit(1000, 0);
    REQUIRE(w.run_until([&] { return done; }));
    CHECK(w.processes.terminations.empty());
}

TEST_CASE("a client reconnecting with since= gets a gap notice, then what the buffer kept") {
    fake_world w;
    w.env.settings.replay_buffer_bytes = 2048;
    auto k = make_session(w);
    REQUIRE(start_and_connect(w, *k) == "");
    auto first = std::make_shared<recording_client>();
    k->attach(first);
    for (int i = 0; i < 20; ++i)
        w.links.last().on_message(
            channel::iopub,
            from_kernel(
                "stream",
                {{"name", "stdout"}, {"text", "line " + std::to_string(i) + std::string(200, '.')}},
                "req-1"));
    REQUIRE(w.run_until([&] { return first->stream_texts().size() == 20; }));

    auto late = std::make_shared<recording_client>();
    k->attach(late, 0);
    REQUIRE(w.run_until([&] { return !late->got.empty(); }));
    auto texts = late->stream_texts();
    REQUIRE(texts.size() >= 2);
    CHECK(texts.size() < 21);
    CHECK(texts[0].rfind("[callisto] output 1-", 0) == 0);
    CHECK(texts[0].find("was dropped from the replay buffer") != std::string::npos);
    auto gap = kp::parse_untrusted_json(late->got[0].second->metadata).value;
    CHECK(gap["callisto_gap"]["from"] == 1);
    // The rest is the tail of the output, complete and in order, ending with the last line.
    CHECK(texts.back().rfind("line 19", 0) == 0);
    for (std::size_t i = 2; i < texts.size(); ++i)
        CHECK(std::stoi(texts[i].substr(5)) == std::stoi(texts[i - 1].substr(5)) + 1);
}

TEST_CASE("requests sent while the kernel starts are held, up to 1024, then forwarded in order") {
    fake_world w;
    auto k = make_session(w);
    auto client = std::make_shared<recording_client>();
    std::optional<std::string> ready;
    k->start([&](kernel_outcome r) { ready = r.message; });
    REQUIRE(w.run_until([&] { return !w.links.opened.empty(); }));
    std::vector<std::string> ids;
    for (int i = 0; i < 1030; ++i) {
        auto req = request("execute_request");
        ids.push_back(req.msg_id);
        k->submit(client, channel::shell, std::move(req));
    }
    w.settle();
    CHECK(w.links.sent.empty());  // nothing reaches a kernel that is not connected
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return ready.has_value(); }));
    CHECK(w.links.count(channel::shell, "execute_request") == 1024);
    CHECK(w.links.sent.front().msg.msg_id == ids.front());
    CHECK(w.links.sent.back().msg.msg_id == ids[1023]);
}

TEST_CASE_FIXTURE(running_session,
                  "a kernel that dies while running is restarted, and its clients are told why") {
    w.processes.exit(1000, 1);
    REQUIRE(w.run_until([&] { return w.processes.spawned.size() == 2; }));
    CHECK(k->state() == kernel_state::restarting);
    CHECK(k->model()["reason"] == "kernel process exited with code 1");
    REQUIRE(w.run_until([&] { return client->statuses().size() == 1; }));
    CHECK(client->statuses()[0] == "restarting");
    REQUIRE(w.run_until([&] { return client->stream_texts().size() == 1; }));
    CHECK(client->stream_texts()[0].find("restarting it. Its state is lost.") != std::string::npos);
    CHECK(w.links.closed == std::vector<callisto::transport::link_id>{1});
    w.links.last().on_connected();  // the new process's link
    REQUIRE(w.run_until([&] { return k->state() == kernel_state::running; }));
}

TEST_CASE("a kernel that exits while starting fails its start with what it said last") {
    fake_world w;
    auto k = make_session(w);
    // Written just before it exits; its exit may be handled before the write is read.
    const auto started =
        start_dying(w, *k, "bwrap: execvp /opt/envs/ds/bin/python3: No such file or directory\n");
    CHECK(started.error == kernel_error::start_failed);
    CHECK(started.message ==
          "kernel process exited with code 1: bwrap: execvp /opt/envs/ds/bin/python3: No such "
          "file or directory");
    CHECK(k->model()["reason"] == started.message);
}

TEST_CASE("what a kernel said is bounded in its start failure, and not added to a death") {
    fake_world w;
    auto k = make_session(w);
    std::string traceback;
    for (int i = 0; i < 40; ++i) traceback += "  File \"x.py\", line " + std::to_string(i) + "\n";
    const auto started =
        start_dying(w, *k, traceback + "ModuleNotFoundError: No module named 'ipykernel'\n");
    const std::string prefix = "kernel process exited with code 1: ";
    REQUIRE(started.message.starts_with(prefix));
    CHECK(started.message.size() <= prefix.size() + kernel_process::max_last_words);
    CHECK(started.message.ends_with("line 39\nModuleNotFoundError: No module named 'ipykernel'"));

    // One long line keeps its end.
    fake_world w2;
    auto k2 = make_session(w2);
    const auto cut = start_dying(w2, *k2, std::string(1500, 'x') + "the end");
    CHECK(cut.message.size() == prefix.size() + kernel_process::max_last_words);
    CHECK(cut.message.starts_with(prefix + "..."));
    CHECK(cut.message.ends_with("xthe end"));

    // A kernel that ran, then died: its death is reported as before (what it printed along
    // the way is its own business, in the log).
    fake_world w3;
    auto k3 = make_session(w3);
    REQUIRE(start_and_connect(w3, *k3) == "");
    w3.processes.say(1000, "Segmentation fault\n");
    w3.processes.exit(1000, 1);
    REQUIRE(w3.run_until([&] { return w3.processes.spawned.size() == 2; }));
    CHECK(k3->model()["reason"] == "kernel process exited with code 1");
}

TEST_CASE("the warm pool refills after a kernel that failed to start") {
    fake_world w;
    const auto dir = w.root / "kernels" / "python3";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "kernel.json")
        << R"({"argv": ["/usr/bin/python3", "-f", "{connection_file}"], "display_name": "P"})";
    callisto::launcher::kernelspec_catalog catalog({w.root / "kernels"});
    int made = 0;
    warm_pool pool(
        w.ioc, catalog, {{"python3", 1}},
        [&](callisto::launcher::kernelspec spec) {
            return std::make_shared<kernel_session>(w.env, "pooled-" + std::to_string(++made),
                                                    std::move(spec),
                                                    std::map<std::string, std::string>{});
        },
        callisto::logger{});
    w.processes.failures_to_come = 1;
    pool.start();
    // The first kernel fails at once; the pool tries again after a delay and its kernel
    // connects: the pool is full.
    std::size_t connected = 0;
    REQUIRE(w.run_until([&] {
        while (connected < w.links.opened.size()) w.links.opened[connected++]->on_connected();
        return pool.ready("python3") == 1;
    }));
    CHECK(made == 2);
    CHECK(w.processes.spawned.size() == 1);
    CHECK(pool.filled_once());
    auto claimed = pool.claim("python3");
    REQUIRE(claimed);
    CHECK(claimed->state() == kernel_state::running);
    CHECK(pool.claim("python3") == nullptr);  // each pooled kernel is handed out once
}

TEST_CASE("the metrics count starts, a requested restart, and a death by its cause") {
    fake_world w;
    auto k = make_session(w);
    REQUIRE(start_and_connect(w, *k) == "");
    CHECK(w.metrics.starts.with({"python3"}).value() == 1);
    CHECK(w.metrics.start_seconds.with({"python3"}).read().cumulative.back() == 1);

    std::optional<std::string> restarted;
    k->restart([&](kernel_outcome r) { restarted = r.message; });
    REQUIRE(w.run_until([&] { return w.links.count(channel::control, "shutdown_request") == 1; }));
    w.processes.exit(1000, 0);
    REQUIRE(w.run_until([&] { return w.links.opened.size() == 2; }));
    w.links.last().on_connected();
    REQUIRE(w.run_until([&] { return restarted.has_value(); }));
    CHECK(w.metrics.restarts.with({"requested"}).value() == 1);
    CHECK(w.metrics.starts.with({"python3"}).value() == 2);

    w.processes.exit(1001, 1);  // dies on its own: restarted automatically
    REQUIRE(w.run_until([&] { return w.processes.spawned.size() == 3; }));
    CHECK(w.metrics.deaths.with({"crash"}).value() == 1);
    CHECK(w.metrics.restarts.with({"crash"}).value() == 1);
    CHECK(w.metrics.deaths.with({"oom"}).value() == 0);
}

TEST_CASE_FIXTURE(audited_session,
                  "a WebSocket client's executions are recorded before the kernel has them, then "
                  "reported with status and output, without their code") {
    observer.sent_to_kernel = [&] { return w.links.count(channel::shell, "execute_request"); };
    const std::string id = submit_and_await(w, *k, client, channel::shell,
                                            request("execute_request", {{"code", "print('hi')"}}));
    REQUIRE(observer.started_executions.size() == 1);
    CHECK(observer.sent_at_start == std::vector<std::size_t>{0});  // before the kernel had it
    CHECK(observer.started_executions[0].code == "print('hi')");
    CHECK(observer.started_executions[0].msg_id == id);
    w.links.last().on_message(channel::iopub,
                              from_kernel("stream", {{"name", "stdout"}, {"text", "hi\n"}}, id));
    w.links.last().on_message(channel::shell, from_kernel("execute_reply", {{"status", "ok"}}, id));
    REQUIRE(w.run_until([&] { return observer.finished_executions.size() == 1; }));
    const auto& e = observer.finished_executions[0];
    CHECK(e.msg_id == id);
    CHECK(e.record_seq == 1);  // linked to its start's record
    CHECK(e.code.empty());     // pending executions hold no code
    CHECK(e.user == "ana");
    CHECK(e.kernel_id == "k-1");
    CHECK(e.status == "ok");
    CHECK(e.output_bytes > 0);
    CHECK(w.metrics.executions.with({"jupyter", "ok"}).value() == 1);

    // One the kernel never answers: lost when it dies.
    submit_and_await(w, *k, client, channel::shell,
                     request("execute_request", {{"code", "while True: pass"}}));
    w.processes.exit(1000, 1);
    REQUIRE(w.run_until([&] { return observer.finished_executions.size() == 2; }));
    CHECK(observer.finished_executions[1].status == "lost");
    CHECK(w.metrics.executions.with({"jupyter", "lost"}).value() == 1);
}

TEST_CASE_FIXTURE(audited_session,
                  "an execute_request the observer refuses never reaches the kernel; the client is "
                  "told, and the next one is asked again") {
    observer.refusing = "the audit log cannot be written: No space left on device";
    k->submit(client, channel::shell, request("execute_request", {{"code", "1"}}));
    // busy, error, idle on iopub and the execute_reply: what a kernel sends for a failure.
    REQUIRE(w.run_until([&] { return client->frames.size() == 4; }));
    CHECK(w.links.count(channel::shell, "execute_request") == 0);
    CHECK(observer.finished_executions.empty());
    // Other requests still pass.
    submit_and_await(w, *k, client, channel::shell, request("kernel_info_request"));
    // Once the observer can record again, the next execution runs: no lock-out.
    observer.refusing.clear();
    submit_and_await(w, *k, client, channel::shell, request("execute_request", {{"code", "2"}}));
    CHECK(observer.started_executions.size() == 1);
}

TEST_CASE_FIXTURE(audited_session,
                  "an execute_request on the control channel never reaches the kernel; it is "
                  "answered") {
    k->submit(client, channel::control, request("execute_request", {{"code", "import os"}}));
    // busy, error, idle on iopub and the execute_reply, as for any failed execution.
    REQUIRE(w.run_until([&] { return client->frames.size() == 4; }));
    CHECK(w.links.count(channel::control, "execute_request") == 0);
    CHECK(observer.finished_executions.empty());
}

TEST_CASE("an execute_request whose code holds a NUL never reaches the kernel, audited or not") {
    // ipykernel fails on it without an execute_reply: the client would wait for ever.
    for (bool audited : {false, true}) {
        INFO("audited: " << audited);
        fake_world w;
        recording_observer observer;
        if (audited) w.env.executions = &observer;
        auto k = make_session(w);
        REQUIRE(start_and_connect(w, *k) == "");
        auto client = std::make_shared<websocket_client>();
        k->attach(client);
        k->submit(client, channel::shell,
                  request("execute_request", {{"code", std::string("print(1)\0", 9)}}));
        // busy, error, idle on iopub and the execute_reply, as for any failed execution.
        REQUIRE(w.run_until([&] { return client->frames.size() == 4; }));
        CHECK(w.links.count(channel::shell, "execute_request") == 0);
        CHECK(observer.finished_executions.empty());
        submit_and_await(w, *k, client, channel::shell,
                         request("execute_request", {{"code", "print(1)"}}));
    }
}

TEST_CASE_FIXTURE(audited_session,
                  "a debugger's evaluate is recorded as an execution, and refused with the log") {
    const std::string id =
        submit_and_await(w, *k, client, channel::control,
                         request("debug_request", {{"seq", 3},
                                                   {"type", "request"},
                                                   {"command", "evaluate"},
                                                   {"arguments", {{"expression", "secret"}}}}));
    w.links.last().on_message(channel::control,
                              from_kernel("debug_reply", {{"success", true}}, id));
    REQUIRE(w.run_until([&] { return observer.finished_executions.size() == 1; }));
    CHECK(observer.started_executions.at(0).kind == "debug_request evaluate");
    CHECK(observer.started_executions.at(0).code == "secret");
    CHECK(observer.finished_executions[0].kind == "debug_request evaluate");
    CHECK(observer.finished_executions[0].status == "ok");
    REQUIRE(w.run_until([&] { return client->frames.size() == 1; }));  // the reply, relayed

    // Commands that run no code pass, recorded or not.
    submit_and_await(w, *k, client, channel::control,
                     request("debug_request", {{"command", "stackTrace"}}));

    observer.refusing = "the audit log cannot be written: No space left on device";
    k->submit(client, channel::control,
              request("debug_request", {{"command", "setVariable"},
                                        {"arguments", {{"name", "x"}, {"value", "1"}}}}));
    // An unsuccessful debug_reply, and nothing sent to the kernel.
    REQUIRE(w.run_until([&] { return client->frames.size() == 2; }));
    CHECK(w.links.count(channel::control, "debug_request") == 2);
    CHECK(observer.finished_executions.size() == 1);
}

TEST_CASE_FIXTURE(audited_session,
                  "an execute_request's user_expressions reach the record with its code") {
    const std::string id = submit_and_await(
        w, *k, client, channel::shell,
        request("execute_request",
                {{"code", ""}, {"user_expressions", {{"x", "__import__('os').getuid()"}}}}));
    w.links.last().on_message(channel::shell, from_kernel("execute_reply", {{"status", "ok"}}, id));
    REQUIRE(w.run_until([&] { return observer.finished_executions.size() == 1; }));
    CHECK(observer.started_executions.at(0).user_expressions ==
          nlohmann::json{{"x", "__import__('os').getuid()"}});
}

TEST_CASE(
    "a WebSocket client gets an error's fields cut, on iopub and in the reply; "
    "the gateway's own clients get them whole") {
    fake_world w;
    w.env.settings.ws_output_limit_bytes = 4000;  // the value and the traceback: 2000 each
    auto k = make_session(w);
    REQUIRE(start_and_connect(w, *k) == "");
    auto ws = std::make_shared<websocket_client>();
    auto inside = std::make_shared<recording_client>();
    k->attach(ws);
    k->attach(inside);
    const std::string id = submit_and_await(
        w, *k, ws, channel::shell, request("execute_request", {{"code", "raise ValueError(big)"}}));
    const std::string value = "START" + std::string(100'000, 'e') + "END";
    const nlohmann::json error = {{"ename", "ValueError"},
                                  {"evalue", value},
                                  {"traceback", {"Traceback", "ValueError: " + value}}};
    w.links.last().on_message(channel::iopub, from_kernel("error", error, id));
    nlohmann::json reply = error;
    reply["status"] = "error";
    reply["execution_count"] = 1;
    w.links.last().on_message(channel::shell, from_kernel("execute_reply", reply, id));
    w.links.last().on_message(
        channel::iopub,
        from_kernel("execute_result", {{"data", {{"text/plain", "small"}}}, {"metadata", {}}}, id));
    REQUIRE(w.run_until([&] { return ws->frames.size() == 3; }));
    std::map<std::string, nlohmann::json> seen;
    for (const auto& frame : ws->frames) {
        std::error_code ec;
        auto m = kp::from_websocket(frame->str(), frame->binary, kp::websocket_format::v1, ec);
        REQUIRE_FALSE(ec);
        seen[m.msg.msg_type] = kp::parse_untrusted_json(m.msg.content).value;
        CHECK(m.msg.content.size() < 5000);
    }
    for (const char* type : {"error", "execute_reply"}) {
        INFO(type);
        const std::string shown = seen.at(type)["evalue"];
        CHECK(shown.size() <= 2000);
        CHECK(shown.starts_with("START"));
        CHECK(shown.ends_with("END"));
        CHECK(shown.find("bytes truncated ...]") != std::string::npos);
        CHECK(seen.at(type)["traceback"][1].get<std::string>().ends_with("END"));
    }
    CHECK(seen.at("execute_reply")["status"] == "error");
    CHECK(seen.at("execute_result")["data"]["text/plain"] == "small");
    // The interpreter's recorder gets the error as the kernel sent it, and cuts it itself.
    REQUIRE(w.run_until([&] {
        for (const auto& [ch, m] : inside->got)
            if (m->msg_type == "error") return true;
        return false;
    }));
    for (const auto& [ch, m] : inside->got)
        if (m->msg_type == "error")
            CHECK(kp::parse_untrusted_json(m->content).value["evalue"] == value);
}

namespace {

// The msg_id of the last kernel_info_request the session sent on `ch` (a barrier).
std::string last_kernel_info(const fake_world& w, channel ch) {
    for (auto it = w.links.sent.rbegin(); it != w.links.sent.rend(); ++it)
        if (it->ch == ch && it->msg.msg_type == "kernel_info_request") return it->msg.msg_id;
    return {};
}

nlohmann::json content_of(const kp::message& m) {
    return kp::parse_untrusted_json(m.content).value;
}

}  // namespace

TEST_CASE_FIXTURE(
    running_session,
    "a reply lost with a message ZeroMQ dropped is answered with an error once a barrier behind "
    "it is answered") {
    const std::string before_id = submit_and_await(
        w, *k, client, channel::shell, request("execute_request", {{"code", "raise big"}}));

    // The kernel's reply was over the limit: ZeroMQ dropped it, the reactor says so.
    w.links.last().on_message_dropped(channel::shell);
    REQUIRE(w.run_until([&] { return !last_kernel_info(w, channel::shell).empty(); }));
    const std::string barrier = last_kernel_info(w, channel::shell);
    // Sent after the barrier, so the kernel answers it after the barrier: not lost.
    const std::string after_id = submit_and_await(w, *k, client, channel::shell,
                                                  request("execute_request", {{"code", "1"}}));
    w.settle();
    CHECK(client->got.empty());  // nothing is known lost before the barrier is answered

    w.links.last().on_message(channel::shell,
                              from_kernel("kernel_info_reply", {{"status", "ok"}}, barrier));
    REQUIRE(w.run_until([&] { return client->got.size() == 2; }));
    // The error on iopub and the reply, both for the request sent before the drop.
    CHECK(client->got[0].first == channel::iopub);
    CHECK(client->got[0].second->msg_type == "error");
    CHECK(client->got[1].first == channel::shell);
    CHECK(client->got[1].second->msg_type == "execute_reply");
    for (const auto& [ch, m] : client->got) CHECK(m->parent_msg_id == before_id);
    const auto reply = content_of(*client->got[1].second);
    CHECK(reply["status"] == "error");
    CHECK(reply["ename"] == "MessageTooLarge");
    CHECK(reply["evalue"].get<std::string>().find("limit of 16 MiB for replies") !=
          std::string::npos);

    // The request sent after the barrier gets its own reply, as usual.
    w.links.last().on_message(channel::shell,
                              from_kernel("execute_reply", {{"status", "ok"}}, after_id));
    REQUIRE(w.run_until([&] { return client->got.size() == 3; }));
    CHECK(client->got[2].second->parent_msg_id == after_id);
    CHECK(content_of(*client->got[2].second)["status"] == "ok");
}

TEST_CASE_FIXTURE(
    running_session,
    "after a message dropped on iopub, clients are told, and an idle lost with it is published "
    "once a status of the barrier arrives") {
    const std::string id = submit_and_await(w, *k, client, channel::shell,
                                            request("execute_request", {{"code", "print(big)"}}));
    auto& link = w.links.last();
    link.on_message(channel::iopub, from_kernel("status", {{"execution_state", "busy"}}, id));
    link.on_message(channel::shell, from_kernel("execute_reply", {{"status", "ok"}}, id));
    REQUIRE(w.run_until([&] { return client->got.size() == 2; }));

    // The output (and the idle after it) went out with the dropped connection.
    link.on_message_dropped(channel::iopub);
    REQUIRE(w.run_until([&] { return client->got.size() == 3; }));
    CHECK(client->got[2].second->msg_type == "stream");
    CHECK(client->got[2].second->parent_msg_id == id);
    CHECK(client->stream_texts().back().find("output that followed it may be lost") !=
          std::string::npos);
    const std::string barrier = last_kernel_info(w, channel::shell);
    REQUIRE(!barrier.empty());
    // The barrier's reply alone says nothing of iopub.
    link.on_message(channel::shell, from_kernel("kernel_info_reply", {{"status", "ok"}}, barrier));
    w.settle();
    CHECK(client->got.size() == 3);
    // Its busy, published after everything the kernel did for the earlier request: that
    // request's idle is not coming.
    link.on_message(channel::iopub, from_kernel("status", {{"execution_state", "busy"}}, barrier));
    REQUIRE(w.run_until([&] { return client->got.size() == 4; }));
    CHECK(client->statuses() == std::vector<std::string>{"busy", "idle"});
    CHECK(client->got[3].second->parent_msg_id == id);
    // The barrier's own statuses are no client's.
    link.on_message(channel::iopub, from_kernel("status", {{"execution_state", "idle"}}, barrier));
    w.settle();
    CHECK(client->got.size() == 4);
    CHECK(k->model()["execution_state"] == "idle");
}

TEST_CASE_FIXTURE(running_session,
                  "a request answered before the barrier's reply is not answered again") {
    const std::string id =
        submit_and_await(w, *k, client, channel::control, request("inspect_request"));
    auto& link = w.links.last();
    link.on_message_dropped(channel::control);
    REQUIRE(w.run_until([&] { return !last_kernel_info(w, channel::control).empty(); }));
    CHECK(last_kernel_info(w, channel::shell).empty());  // the barrier goes where the drop was
    link.on_message(channel::control, from_kernel("inspect_reply", {{"status", "ok"}}, id));
    link.on_message(channel::control, from_kernel("kernel_info_reply", {{"status", "ok"}},
                                                  last_kernel_info(w, channel::control)));
    w.settle();
    REQUIRE(client->got.size() == 1);
    CHECK(content_of(*client->got[0].second)["status"] == "ok");
}

TEST_CASE_FIXTURE(audited_session,
                  "a Jupyter client's execution whose reply was lost is recorded as ended in "
                  "error") {
    submit_and_await(w, *k, client, channel::shell,
                     request("execute_request", {{"code", "raise big"}}));
    w.links.last().on_message_dropped(channel::shell);
    REQUIRE(w.run_until([&] { return !last_kernel_info(w, channel::shell).empty(); }));
    w.links.last().on_message(channel::shell, from_kernel("kernel_info_reply", {{"status", "ok"}},
                                                          last_kernel_info(w, channel::shell)));
    // The error on iopub and the reply.
    REQUIRE(w.run_until([&] { return client->frames.size() == 2; }));
    REQUIRE(observer.finished_executions.size() == 1);
    CHECK(observer.finished_executions[0].status == "error");
}

TEST_CASE_FIXTURE(running_session,
                  "the code a kernel echoes in execute_input is cut in what clients get") {
    const std::string code = "HEAD" + std::string(1 << 20, 'z') + "TAIL";
    w.links.last().on_message(
        channel::iopub,
        from_kernel("execute_input", {{"code", code}, {"execution_count", 3}}, "r"));
    REQUIRE(w.run_until([&] { return client->got.size() == 1; }));
    const auto echoed = content_of(*client->got[0].second);
    const auto kept = echoed["code"].get<std::string>();
    CHECK(kept.size() <= max_echoed_code_bytes);
    CHECK(kept.starts_with("HEAD"));
    CHECK(kept.ends_with("TAIL"));
    CHECK(echoed["execution_count"] == 3);
    CHECK(client->got[0].second->parent_msg_id == "r");
}

TEST_CASE_FIXTURE(audited_session,
                  "an audited execution holds none of its code's memory while it runs") {
    // Each execution pending a reply kept the buffer of its code (16 MiB for a 16 MiB cell).
    const std::string id =
        submit_and_await(w, *k, client, channel::shell,
                         request("execute_request", {{"code", std::string(1 << 20, '#')}}));
    REQUIRE(observer.started_executions.size() == 1);
    CHECK(observer.started_executions[0].code.size() == (1u << 20));  // recorded whole
    w.links.last().on_message(channel::shell, from_kernel("execute_reply", {{"status", "ok"}}, id));
    REQUIRE(w.run_until([&] { return observer.finished_executions.size() == 1; }));
    CHECK(observer.code_capacity_at_finish[0] < 64);
}

TEST_CASE("a kernel asked for with network does not start unsandboxed: nothing is spawned") {
    fake_world w;
    auto k = make_session(w);
    k->set_egress({{"pypi.org"}, "ana"});
    CHECK(k->egress().allow == std::vector<std::string>{"pypi.org"});
    std::optional<kernel_outcome> started;
    k->start([&](kernel_outcome r) { started = r; });
    REQUIRE(w.run_until([&] { return started.has_value(); }));
    CHECK(started->error == kernel_error::start_failed);
    CHECK(started->message.find("egress needs the sandbox") != std::string::npos);
    CHECK(w.processes.spawned.empty());
}

TEST_CASE("a networked kernel's proxy variables point at its own listener; NO_PROXY its loopback") {
    const auto v = kernel_process::egress_variables();
    for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
        CHECK(v.at(name) == "http://127.0.0.1:" + std::to_string(egress_listen_port));
    CHECK(v.at("NO_PROXY") == "localhost,127.0.0.1,::1");
    CHECK(v.at("no_proxy") == "localhost,127.0.0.1,::1");
    CHECK(egress_listen_port < 1024);  // privileged: the kernel cannot take it first
}
