#pragma once
// Fakes for the kernel layer's two ports and for a client: a kernel session or the warm pool
// runs against them on an io_context the test drives, with no kernel, process or socket.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <boost/asio/io_context.hpp>

#include "common/unique_fd.hpp"
#include "gateway/kernels/session/kernel_client.hpp"
#include "gateway/kernels/session/kernel_environment.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::kernels::test {

namespace kp = callisto::kernelproto;

struct fake_links final : link_port {
    struct sent_message {
        transport::link_id id;
        kp::channel ch;
        kp::message msg;
    };
    std::vector<std::shared_ptr<transport::link_events>> opened;  // index = id - 1
    std::vector<transport::link_options> options;                 // as opened
    std::vector<sent_message> sent;
    std::vector<transport::link_id> closed;
    // Reports the link connected from inside open(), before it returns: what the reactor's
    // thread does when a kernel answers faster than the opener's next statement.
    bool connect_before_open_returns = false;

    transport::link_id open(const kp::connection_info&,
                            std::shared_ptr<transport::link_events> events,
                            transport::link_options o) override {
        const transport::link_id id = opened.size() + 1;
        events->on_open(id);  // as reactor::open does
        opened.push_back(events);
        options.push_back(std::move(o));
        if (connect_before_open_returns) events->on_connected();
        return id;
    }
    void send(transport::link_id id, kp::channel ch, kp::message msg) override {
        sent.push_back({id, ch, std::move(msg)});
    }
    void close(transport::link_id id) override { closed.push_back(id); }

    transport::link_events& last() { return *opened.back(); }
    std::size_t count(kp::channel ch, const std::string& type) const {
        std::size_t n = 0;
        for (const auto& s : sent) n += s.ch == ch && s.msg.msg_type == type;
        return n;
    }
};

struct fake_processes final : process_port {
    struct child {
        pid_t pid;
        launcher::process_supervisor::exit_handler on_exit;
    };
    std::vector<child> spawned;
    std::vector<std::pair<pid_t, int>> signals;
    std::vector<std::pair<pid_t, std::chrono::milliseconds>> terminations;
    int failures_to_come = 0;   // the next spawns that throw
    std::set<pid_t> adoptable;  // pids adopt() finds alive
    std::vector<child> adopted;
    std::map<pid_t, unique_fd> outputs;  // a copy of each child's stdout and stderr

    pid_t spawn(const launcher::spawn_description& what,
                launcher::process_supervisor::exit_handler on_exit) override {
        if (failures_to_come > 0) {
            --failures_to_come;
            throw std::runtime_error("cannot start python3: execve: No such file or directory");
        }
        const pid_t pid = 1000 + static_cast<pid_t>(spawned.size());
        spawned.push_back({pid, std::move(on_exit)});
        if (what.output_fd >= 0) outputs[pid].reset(::dup(what.output_fd));
        return pid;
    }
    // The child writes to its stdout or stderr, and (`last`) closes them.
    void say(pid_t pid, const std::string& text, bool last = true) {
        auto& fd = outputs.at(pid);
        REQUIRE(::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
        if (last) fd.reset();
    }
    bool adopt(pid_t pid, launcher::process_supervisor::exit_handler on_exit) override {
        if (!adoptable.contains(pid)) return false;
        adopted.push_back({pid, std::move(on_exit)});
        return true;
    }
    void signal_group(pid_t pid, int sig) override { signals.emplace_back(pid, sig); }
    void terminate(pid_t pid, std::chrono::milliseconds grace) override {
        terminations.emplace_back(pid, grace);
    }
    // The process exits, as the supervisor reports it (from its own thread, here the test's).
    void exit(pid_t pid, int code) {
        for (auto* list : {&spawned, &adopted})
            for (auto& c : *list)
                if (c.pid == pid) c.on_exit(pid, launcher::exit_status{code, 0, false, {}});
    }
};

// A client inside the gateway: takes messages as they are.
struct recording_client final : kernel_client {
    std::vector<std::pair<kp::channel, std::shared_ptr<const kp::message>>> got;
    std::vector<std::string> closed_because;
    std::string session;  // the Jupyter session it names on connecting

    kp::websocket_format format() const override { return kp::websocket_format::v1; }
    void deliver(std::shared_ptr<const kp::websocket_frame>) override {}
    bool takes_messages() const override { return true; }
    void deliver_message(kp::channel ch, std::shared_ptr<const kp::message> msg) override {
        got.emplace_back(ch, std::move(msg));
    }
    void close_from_kernel(std::string reason) override {
        closed_because.push_back(std::move(reason));
    }
    std::string jupyter_session() const override { return session; }
    // The text of every stream message received, in order.
    std::vector<std::string> stream_texts() const {
        std::vector<std::string> out;
        for (const auto& [ch, m] : got)
            if (m->msg_type == "stream")
                out.push_back(kp::parse_untrusted_json(m->content).value.value("text", ""));
        return out;
    }
    std::vector<std::string> statuses() const {
        std::vector<std::string> out;
        for (const auto& [ch, m] : got)
            if (m->msg_type == "status")
                out.push_back(
                    kp::parse_untrusted_json(m->content).value.value("execution_state", ""));
        return out;
    }
};

// Everything a session needs, with the ports faked and files under a temporary directory.
struct fake_world {
    std::filesystem::path root = std::filesystem::temp_directory_path() /
                                 ("callisto-kernels-test-" + std::to_string(::getpid()));
    // The ports outlive the io_context: handlers it still holds may own a session, whose
    // destructor closes its link.
    fake_links links;
    fake_processes processes;
    boost::asio::io_context ioc;
    metrics::registry registry;
    kernel_metrics metrics{registry};
    kernel_environment env{ioc, links, processes, metrics, settings(root), logger{}};

    fake_world() { std::filesystem::create_directories(root); }
    ~fake_world() {
        // The link listeners and the exit handlers hold strands of the io_context: released
        // while it still stands (the ports stay usable for sessions closing theirs later).
        links.opened.clear();
        processes.spawned.clear();
        processes.adopted.clear();
        std::filesystem::remove_all(root);
    }

    static kernel_settings settings(const std::filesystem::path& root) {
        kernel_settings s;
        s.runtime_root = root;
        s.shutdown_wait = std::chrono::milliseconds(20);
        s.kill_grace = std::chrono::milliseconds(3000);
        return s;
    }
    static launcher::kernelspec spec() {
        launcher::kernelspec k;
        k.name = "python3";
        k.argv = {"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"};
        return k;
    }
    // Runs every handler that is ready, and those they make ready, until none is left.
    void settle() {
        ioc.restart();
        while (ioc.poll() > 0) {
        }
    }
    // Runs handlers until `done` holds; false when it never does within the (generous) limit.
    bool run_until(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) return false;
            ioc.restart();
            ioc.run_for(std::chrono::milliseconds(5));
        }
        return true;
    }
};

// A WebSocket client: gets encoded frames, and says who it is.
struct websocket_client final : kernel_client {
    std::vector<std::shared_ptr<const kp::websocket_frame>> frames;

    kp::websocket_format format() const override { return kp::websocket_format::v1; }
    void deliver(std::shared_ptr<const kp::websocket_frame> frame) override {
        frames.push_back(std::move(frame));
    }
    std::string user_name() const override { return "ana"; }
    void close_from_kernel(std::string) override {}
};

// The server's execution observer (audit, in production): records each execution as it
// starts (numbering it) and when it ends; refuses while `refusing` is set.
struct recording_observer final : execution_observer {
    std::string refusing;
    std::vector<websocket_execution> started_executions;
    std::vector<websocket_execution> finished_executions;
    // How many requests the kernel had been sent when each start was recorded.
    std::function<std::size_t()> sent_to_kernel;
    std::vector<std::size_t> sent_at_start;

    [[nodiscard]] std::string starting(websocket_execution& e) override {
        if (sent_to_kernel) sent_at_start.push_back(sent_to_kernel());
        if (!refusing.empty()) return refusing;
        e.record_seq = started_executions.size() + 1;
        started_executions.push_back(e);
        return {};
    }
    // The memory each execution's code still held when it ended (a copy would not show it).
    std::vector<std::size_t> code_capacity_at_finish;
    void finished(const websocket_execution& e) override {
        code_capacity_at_finish.push_back(e.code.capacity());
        finished_executions.push_back(e);
    }
};

// A message from the kernel answering `parent`.
inline kp::message from_kernel(std::string type, nlohmann::json content,
                               const std::string& parent = "") {
    kp::message m = kp::make_message(std::move(type), content, "kernel");
    m.parent_msg_id = parent;
    if (!parent.empty()) m.parent_header = nlohmann::json{{"msg_id", parent}}.dump();
    return m;
}

}  // namespace callisto::gateway::kernels::test
