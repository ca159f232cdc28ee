#pragma once
// What kernel sessions need from the threads below them, as two small interfaces: the link to a
// kernel's sockets (the reactor) and its process (the supervisor). The server plugs in the real
// ones through the adapters here; the kernel-layer tests plug in fakes and drive a session
// without a kernel, a process or a socket.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <sys/types.h>

#include "kernelproto/channel.hpp"
#include "kernelproto/connection_info.hpp"
#include "kernelproto/message.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/process/spawn_description.hpp"
#include "launcher/zygote/zygote_pool.hpp"
#include "transport/link_events.hpp"
#include "transport/reactor.hpp"

namespace callisto::gateway::kernels {

class link_port {
public:
    virtual ~link_port() = default;
    // Calls events->on_open(id) before it returns, and before any other report on the link.
    virtual transport::link_id open(const kernelproto::connection_info& info,
                                    std::shared_ptr<transport::link_events> events,
                                    transport::link_options options) = 0;
    virtual void send(transport::link_id id, kernelproto::channel ch, kernelproto::message msg) = 0;
    virtual void close(transport::link_id id) = 0;
};

// What a kernel may reach through the egress proxy (issue 36), fixed at its creation: the
// rules in canonical form (gateway/egress/egress_allowlist.hpp), already checked against the
// server's and the user's ceilings, and whose kernel it is. Empty: no network at all, no
// listener and no proxy variables, exactly as without egress.
struct egress_request {
    std::vector<std::string> allow;
    std::string user;
    bool empty() const { return allow.empty(); }
};

// Where a kernel's proxy listens inside its own network namespace: a privileged port, so
// nothing the kernel runs (unprivileged, no capabilities) can take it first.
inline constexpr std::uint16_t egress_listen_port = 1023;

// The kernel's end of the egress proxy, which lives above this layer (the composition root
// plugs in gateway/kernel_egress.hpp).
class egress_port {
public:
    virtual ~egress_port() = default;
    // Listens on 127.0.0.1:egress_listen_port inside the network namespace `netns_fd` refers
    // to, and serves what arrives there as `kernel_id`'s (and only its) egress. Returns a
    // handle that closes the listener and ends its connections when destroyed, or why not.
    virtual std::variant<std::shared_ptr<void>, std::string> open(const std::string& kernel_id,
                                                                  const egress_request& what,
                                                                  int netns_fd) = 0;
};

class process_port {
public:
    virtual ~process_port() = default;
    // Throws when the process cannot be started.
    virtual pid_t spawn(const launcher::spawn_description& what,
                        launcher::process_supervisor::exit_handler on_exit) = 0;
    // Watches a process an earlier gateway started (kernel_process::adopt); false when gone.
    virtual bool adopt(pid_t pid, launcher::process_supervisor::exit_handler on_exit) = 0;
    virtual void signal_group(pid_t pid, int sig) = 0;
    // To the groups of the process's children: the kernel under bwrap's init.
    virtual void signal_child_groups(pid_t pid, int sig) { signal_group(pid, sig); }
    virtual void terminate(pid_t pid, std::chrono::milliseconds grace) = 0;
    // True when a zygote forked it (the kernel model says how each kernel started).
    virtual bool forked(pid_t) const { return false; }
};

class reactor_link_port final : public link_port {
public:
    explicit reactor_link_port(transport::reactor& reactor) : reactor_(reactor) {}
    transport::link_id open(const kernelproto::connection_info& info,
                            std::shared_ptr<transport::link_events> events,
                            transport::link_options options) override {
        return reactor_.open(info, std::move(events), std::move(options));
    }
    void send(transport::link_id id, kernelproto::channel ch, kernelproto::message msg) override {
        reactor_.send(id, ch, std::move(msg));
    }
    void close(transport::link_id id) override { reactor_.close(id); }

private:
    transport::reactor& reactor_;
};

// A zygote's fork first, when the spawn allows one and a zygote can make it; else an exec by
// the supervisor. Signals go to whichever started the process.
class supervisor_process_port final : public process_port {
public:
    supervisor_process_port(launcher::process_supervisor& supervisor,
                            launcher::zygote_pool* zygotes)
        : supervisor_(supervisor), zygotes_(zygotes) {}
    pid_t spawn(const launcher::spawn_description& what,
                launcher::process_supervisor::exit_handler on_exit) override {
        if (zygotes_ && what.zygote)
            if (auto pid = zygotes_->try_fork(what, on_exit)) return *pid;
        return supervisor_.spawn(what, std::move(on_exit));
    }
    bool adopt(pid_t pid, launcher::process_supervisor::exit_handler on_exit) override {
        return supervisor_.adopt(pid, std::move(on_exit));
    }
    void signal_group(pid_t pid, int sig) override {
        if (!zygotes_ || !zygotes_->signal(pid, sig)) supervisor_.signal_group(pid, sig);
    }
    void signal_child_groups(pid_t pid, int sig) override {
        supervisor_.signal_child_groups(pid, sig);
    }
    void terminate(pid_t pid, std::chrono::milliseconds grace) override {
        if (!zygotes_ || !zygotes_->terminate(pid, grace)) supervisor_.terminate(pid, grace);
    }
    bool forked(pid_t pid) const override { return zygotes_ && zygotes_->forked(pid); }

private:
    launcher::process_supervisor& supervisor_;
    launcher::zygote_pool* zygotes_;  // null with --zygote=off
};

}  // namespace callisto::gateway::kernels
