#include "gateway/kernels/session/orphan_replies.hpp"

#include <algorithm>

#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::kernels {

namespace {

std::string session_field(const std::string& header_json) {
    const auto parsed = kernelproto::parse_untrusted_json(header_json);
    if (!parsed.ok() || !parsed.value.is_object()) return {};
    const auto it = parsed.value.find("session");
    return it != parsed.value.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string header_session(const kernelproto::message& msg) { return session_field(msg.header); }

std::string parent_session(const kernelproto::message& msg) {
    return session_field(msg.parent_header);
}

std::vector<orphan_replies::reply> orphan_replies::client_seen(
    const std::shared_ptr<kernel_client>& client, const std::string& session) {
    if (session.empty()) return {};
    bool noted = false;
    std::erase_if(sessions_, [&](const auto& known) {
        auto c = known.first.lock();
        if (!c) return true;  // gone
        if (c != client) return false;
        noted = known.second == session;
        return !noted;  // a client that changed its session is noted again below
    });
    if (!noted) sessions_.emplace_back(client, session);
    std::vector<reply> due;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (it->session != session) {
            ++it;
            continue;
        }
        bytes_ -= it->bytes;
        due.push_back(std::move(it->what));
        it = waiting_.erase(it);
    }
    return due;
}

void orphan_replies::client_gone(const kernel_client* client) {
    std::erase_if(sessions_, [&](const auto& known) {
        auto c = known.first.lock();
        return !c || c.get() == client;
    });
}

std::optional<orphan_replies::delivery> orphan_replies::arrived(kernelproto::channel ch,
                                                                kernelproto::message msg) {
    std::string session = parent_session(msg);
    if (session.empty() || session == own_session_) return std::nullopt;
    for (const auto& [weak, known] : sessions_)
        if (known == session)
            if (auto client = weak.lock()) return delivery{client, {ch, std::move(msg)}};
    const std::size_t bytes = kernelproto::message_bytes(msg);
    if (bytes > max_bytes_ || max_replies_ == 0) return std::nullopt;
    while (!waiting_.empty() && (waiting_.size() >= max_replies_ || bytes_ + bytes > max_bytes_)) {
        bytes_ -= waiting_.front().bytes;
        waiting_.pop_front();
    }
    waiting_.push_back({std::move(session), bytes, {ch, std::move(msg)}});
    bytes_ += bytes;
    return std::nullopt;
}

}  // namespace callisto::gateway::kernels
