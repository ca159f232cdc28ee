#include "gateway/e2b/sandbox_registry.hpp"

#include <openssl/crypto.h>

namespace callisto::gateway::e2b {

namespace {

bool same_secret(std::string_view given, std::string_view expected) {
    return !expected.empty() && given.size() == expected.size() &&
           CRYPTO_memcmp(given.data(), expected.data(), given.size()) == 0;
}

}  // namespace

bool is_valid_sandbox_id(std::string_view id) {
    if (id.size() != 20) return false;
    for (char c : id)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
    return true;
}

sandbox_registry::sandbox_registry(clock_fn now, token_fn new_token, sandbox_record_store* records)
    : now_(std::move(now)), new_token_(std::move(new_token)), records_(records) {}

void sandbox_registry::write_down(const sandbox_record& record) {
    // A failed write is logged and counted by the store; the sandbox goes on in memory.
    if (records_) [[maybe_unused]]
        const auto why = records_->save(record);
}

void sandbox_registry::cross_out(const std::string& id) {
    if (records_) records_->remove(id);
}

sandbox_record sandbox_registry::make(std::string template_id, std::string kernel, user owner,
                                      std::map<std::string, std::string> metadata,
                                      std::chrono::seconds timeout) const {
    sandbox_record r;
    // The id comes from the token source too (its first 20 characters, as letters and digits):
    // unguessable, so one sandbox's id tells nothing of the next.
    const std::string raw = new_token_();
    static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (std::size_t i = 0; r.id.size() < 20; ++i)
        r.id.push_back(alphabet[static_cast<unsigned char>(i < raw.size() ? raw[i] : 'x') % 36]);
    r.template_id = std::move(template_id);
    r.kernel = std::move(kernel);
    r.owner = std::move(owner);
    r.metadata = std::move(metadata);
    r.envd_token = new_token_();
    r.traffic_token = new_token_();
    r.started_at = now_();
    r.end_at = r.started_at + timeout;
    return r;
}

void sandbox_registry::add(sandbox_record record) {
    std::lock_guard lock(mutex_);
    auto id = record.id;
    write_down(record);
    sandboxes_[id] = std::move(record);
}

std::optional<sandbox_record> sandbox_registry::find_for(std::string_view id,
                                                         const user& who) const {
    std::lock_guard lock(mutex_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end() || !who.may_use(it->second.owner.name)) return std::nullopt;
    return it->second;
}

std::optional<sandbox_record> sandbox_registry::find_by_token(
    std::string_view id, std::string_view envd_token, std::string_view traffic_token) const {
    std::lock_guard lock(mutex_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return std::nullopt;
    const bool envd = same_secret(envd_token, it->second.envd_token);
    const bool traffic = same_secret(traffic_token, it->second.traffic_token);
    if (!envd && !traffic) return std::nullopt;
    return it->second;
}

std::vector<sandbox_record> sandbox_registry::list_for(const user& who) const {
    std::lock_guard lock(mutex_);
    std::vector<sandbox_record> out;
    for (const auto& [id, r] : sandboxes_)
        if (who.may_use(r.owner.name)) out.push_back(r);
    return out;
}

std::vector<sandbox_record> sandbox_registry::all() const {
    std::lock_guard lock(mutex_);
    std::vector<sandbox_record> out;
    for (const auto& [id, r] : sandboxes_) out.push_back(r);
    return out;
}

std::size_t sandbox_registry::count_for(const std::string& owner) const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [id, r] : sandboxes_) n += r.owner.name == owner;
    return n;
}

bool sandbox_registry::set_timeout(std::string_view id, const user& who,
                                   std::chrono::seconds timeout) {
    std::lock_guard lock(mutex_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end() || !who.may_use(it->second.owner.name)) return false;
    it->second.end_at = now_() + timeout;
    write_down(it->second);
    return true;
}

bool sandbox_registry::add_context(std::string_view id, sandbox_context context) {
    std::lock_guard lock(mutex_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return false;
    if (it->second.default_context.empty()) it->second.default_context = context.id;
    it->second.contexts.push_back(std::move(context));
    write_down(it->second);
    return true;
}

bool sandbox_registry::remove_context(std::string_view id, const std::string& context_id) {
    std::lock_guard lock(mutex_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return false;
    auto& list = it->second.contexts;
    std::erase_if(list, [&](const sandbox_context& c) { return c.id == context_id; });
    if (it->second.default_context == context_id) it->second.default_context.clear();
    write_down(it->second);
    return true;
}

std::optional<sandbox_record> sandbox_registry::remove(std::string_view id, const user& who) {
    std::lock_guard lock(mutex_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end() || !who.may_use(it->second.owner.name)) return std::nullopt;
    auto r = std::move(it->second);
    sandboxes_.erase(it);
    cross_out(r.id);
    return r;
}

std::vector<sandbox_record> sandbox_registry::take_expired() {
    const auto now = now_();
    std::lock_guard lock(mutex_);
    std::vector<sandbox_record> out;
    for (auto it = sandboxes_.begin(); it != sandboxes_.end();) {
        if (it->second.end_at <= now) {
            cross_out(it->first);
            out.push_back(std::move(it->second));
            it = sandboxes_.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

std::vector<sandbox_record> sandbox_registry::take_all() {
    std::lock_guard lock(mutex_);
    std::vector<sandbox_record> out;
    for (auto& [id, r] : sandboxes_) {
        cross_out(id);
        out.push_back(std::move(r));
    }
    sandboxes_.clear();
    return out;
}

}  // namespace callisto::gateway::e2b
