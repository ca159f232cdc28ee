#include "gateway/mcp/mcp_session_registry.hpp"

#include <vector>

#include "kernelproto/ids.hpp"

namespace callisto::gateway::mcp {

mcp_session_registry::mcp_session_registry(tool_backend_factory factory, mcp_session_limits limits,
                                           logger log, clock_fn clock)
    : factory_(std::move(factory)),
      limits_(limits),
      log_(std::move(log)),
      clock_(std::move(clock)) {}

mcp_session_registry::~mcp_session_registry() { close_all(); }

std::shared_ptr<mcp_session> mcp_session_registry::create(const user& owner,
                                                          std::string protocol_version,
                                                          std::string& error) {
    std::lock_guard lock(mutex_);
    if (stopped_) {
        error = "the server is stopping";
        return nullptr;
    }
    if (limits_.max_per_user > 0) {
        std::size_t mine = 0;
        for (auto& [id, s] : sessions_)
            if (s->owner().name == owner.name) ++mine;
        if (mine >= limits_.max_per_user) {
            error = "user '" + owner.name + "' already has " + std::to_string(mine) +
                    " MCP sessions, the limit; end one with DELETE /mcp";
            return nullptr;
        }
    }
    // A v4 UUID from the CSPRNG: unguessable, and only its owner's token reaches it anyway.
    const std::string id = kernelproto::new_uuid();
    auto session = std::make_shared<mcp_session>(id, owner, std::move(protocol_version),
                                                 factory_(owner, id), clock_());
    sessions_[id] = session;
    log_.info("MCP session " + id + " for " + owner.name + " (protocol " +
              session->protocol_version() + ")");
    return session;
}

std::shared_ptr<mcp_session> mcp_session_registry::find_for(const std::string& id,
                                                            const user& who) {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second->owner().name != who.name) return nullptr;
    it->second->touch(clock_());
    return it->second;
}

bool mcp_session_registry::remove_for(const std::string& id, const user& who) {
    std::shared_ptr<mcp_session> s;
    {
        std::lock_guard lock(mutex_);
        auto it = sessions_.find(id);
        if (it == sessions_.end() || it->second->owner().name != who.name) return false;
        s = std::move(it->second);
        sessions_.erase(it);
    }
    end(s, "ended by the client");
    return true;
}

std::size_t mcp_session_registry::expire_idle() {
    if (limits_.idle_timeout.count() == 0) return 0;
    std::vector<std::shared_ptr<mcp_session>> expired;
    {
        std::lock_guard lock(mutex_);
        const auto now = clock_();
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            auto& s = it->second;
            if (!s->busy() && now - s->last_used() > limits_.idle_timeout) {
                expired.push_back(std::move(s));
                it = sessions_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& s : expired) end(s, "expired after being idle");
    return expired.size();
}

void mcp_session_registry::close_all() {
    std::map<std::string, std::shared_ptr<mcp_session>> all;
    {
        std::lock_guard lock(mutex_);
        stopped_ = true;
        all.swap(sessions_);
        if (timer_) timer_->cancel();
    }
    for (auto& [id, s] : all) end(s, "the server is stopping");
}

void mcp_session_registry::close_of_users(const std::set<std::string>& names) {
    std::vector<std::shared_ptr<mcp_session>> gone;
    {
        std::lock_guard lock(mutex_);
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            if (names.contains(it->second->owner().name)) {
                gone.push_back(it->second);
                it = sessions_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& s : gone) end(s, "ended: its user was removed or changed in the users file");
}

std::size_t mcp_session_registry::size() const {
    std::lock_guard lock(mutex_);
    return sessions_.size();
}

void mcp_session_registry::end(const std::shared_ptr<mcp_session>& s, const char* why) {
    log_.info("MCP session " + s->id() + " " + why);
    s->tools().close();
}

void mcp_session_registry::start_expiry(boost::asio::io_context& ioc) {
    if (limits_.idle_timeout.count() == 0) return;
    {
        std::lock_guard lock(mutex_);
        timer_.emplace(ioc);
    }
    schedule_expiry();
}

void mcp_session_registry::schedule_expiry() {
    // Checked often enough that a session outlives its timeout by at most half of it.
    const auto interval = std::clamp<std::chrono::seconds>(
        limits_.idle_timeout / 2, std::chrono::seconds(1), std::chrono::seconds(60));
    std::lock_guard lock(mutex_);
    if (stopped_ || !timer_) return;
    timer_->expires_after(interval);
    timer_->async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        expire_idle();
        schedule_expiry();
    });
}

}  // namespace callisto::gateway::mcp
