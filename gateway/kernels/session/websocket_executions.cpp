#include "gateway/kernels/session/websocket_executions.hpp"

namespace callisto::gateway::kernels {

std::vector<websocket_execution> websocket_executions::started(websocket_execution e) {
    std::vector<websocket_execution> given_up;
    if (auto old = by_msg_id_.find(e.msg_id); old != by_msg_id_.end())
        given_up.push_back(finish(old->second, "lost"));  // a client reusing a msg_id
    while (!pending_.empty() && pending_.size() >= max_pending_)
        given_up.push_back(finish(pending_.begin(), "lost"));
    const std::string id = e.msg_id;
    pending_.push_back(std::move(e));
    by_msg_id_[id] = std::prev(pending_.end());
    return given_up;
}

void websocket_executions::output(const std::string& parent_msg_id, std::size_t bytes) {
    if (auto it = by_msg_id_.find(parent_msg_id); it != by_msg_id_.end())
        it->second->output_bytes += bytes;
}

std::optional<websocket_execution> websocket_executions::replied(const std::string& parent_msg_id,
                                                                 std::string status) {
    auto it = by_msg_id_.find(parent_msg_id);
    if (it == by_msg_id_.end()) return std::nullopt;
    return finish(it->second, std::move(status));
}

std::vector<websocket_execution> websocket_executions::lose_all() {
    std::vector<websocket_execution> out;
    while (!pending_.empty()) out.push_back(finish(pending_.begin(), "lost"));
    return out;
}

websocket_execution websocket_executions::finish(std::list<websocket_execution>::iterator it,
                                                 std::string status) {
    websocket_execution e = std::move(*it);
    by_msg_id_.erase(e.msg_id);
    pending_.erase(it);
    e.status = std::move(status);
    e.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - e.started_steady);
    return e;
}

}  // namespace callisto::gateway::kernels
