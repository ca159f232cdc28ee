#pragma once
// One MCP session: issued by initialize, named by the Mcp-Session-Id header afterwards. It
// belongs to the user who initialized it, speaks the negotiated protocol revision, and owns
// the tool backend (and through it the interpreter context) until it ends.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "gateway/mcp/tool_backend.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::mcp {

class mcp_session {
public:
    using clock = std::chrono::steady_clock;

    mcp_session(std::string id, user owner, std::string protocol_version,
                std::shared_ptr<tool_backend> tools, clock::time_point now)
        : id_(std::move(id)),
          owner_(std::move(owner)),
          protocol_version_(std::move(protocol_version)),
          tools_(std::move(tools)),
          last_used_(now) {}

    const std::string& id() const { return id_; }
    const user& owner() const { return owner_; }
    const std::string& protocol_version() const { return protocol_version_; }
    tool_backend& tools() const { return *tools_; }

    void touch(clock::time_point now) {
        std::lock_guard lock(mutex_);
        last_used_ = now;
    }
    clock::time_point last_used() const {
        std::lock_guard lock(mutex_);
        return last_used_;
    }
    // A session with a tool call in flight is in use, however long the call runs.
    void begin_call() { ++calls_; }
    void end_call() { --calls_; }
    bool busy() const { return calls_.load() > 0; }

    void mark_initialized() { initialized_ = true; }
    bool initialized() const { return initialized_.load(); }

private:
    const std::string id_;
    const user owner_;
    const std::string protocol_version_;
    const std::shared_ptr<tool_backend> tools_;
    mutable std::mutex mutex_;
    clock::time_point last_used_;
    std::atomic<int> calls_{0};
    std::atomic<bool> initialized_{false};
};

}  // namespace callisto::gateway::mcp
