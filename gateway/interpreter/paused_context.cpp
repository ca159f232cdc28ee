#include "gateway/interpreter/paused_context.hpp"

#include <set>
#include <stdexcept>

#include "kernelproto/iso_time.hpp"
#include "kernelproto/json_fields.hpp"

namespace callisto::gateway::interpreter {

using nlohmann::json;
using namespace callisto::kernelproto;

namespace {

std::string id_field(const json& j, const char* name) {
    auto value = string_field(j, name);
    if (!record_directory::valid_id(value))
        throw std::invalid_argument(std::string("'") + name + "' is not an id");
    return value;
}

std::string time_field(const json& j, const char* name) {
    auto value = string_field(j, name);
    if (!parse_iso_time(value))
        throw std::invalid_argument(std::string("'") + name + "' is not an ISO 8601 time");
    return value;
}

}  // namespace

json paused_record::to_json() const {
    return {{"id", id},
            {"owner", owner},
            {"kernel", kernel},
            {"network_allow", network_allow},
            {"policy", kernels::to_string(policy)},
            {"snapshot_id", snapshot_id},
            {"created_at", created_at},
            {"paused_at", paused_at}};
}

paused_record paused_record::from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("not an object");
    static const std::set<std::string> known = {
        "id",     "owner",       "kernel",     "network_allow",
        "policy", "snapshot_id", "created_at", "paused_at"};
    for (const auto& [name, value] : j.items())
        if (!known.contains(name)) throw std::invalid_argument("unknown field '" + name + "'");
    paused_record r;
    r.id = id_field(j, "id");
    r.owner = string_field(j, "owner");
    if (r.owner.empty()) throw std::invalid_argument("'owner' is empty");
    r.kernel = string_field(j, "kernel");
    if (r.kernel.empty()) throw std::invalid_argument("'kernel' is empty");
    const auto& allow = required_field(j, "network_allow");
    if (!allow.is_array()) throw std::invalid_argument("'network_allow' is not a list");
    for (const auto& rule : allow) {
        if (!rule.is_string() || rule.get_ref<const std::string&>().empty())
            throw std::invalid_argument("'network_allow' holds something not a rule");
        r.network_allow.push_back(rule.get<std::string>());
    }
    const auto policy = kernels::parse_kernel_policy(string_field(j, "policy"));
    if (!policy) throw std::invalid_argument("'policy' is not a kernel policy");
    r.policy = *policy;
    r.snapshot_id = id_field(j, "snapshot_id");
    r.created_at = time_field(j, "created_at");
    r.paused_at = time_field(j, "paused_at");
    return r;
}

std::optional<std::chrono::system_clock::time_point> paused_record::expires_at(
    std::chrono::seconds ttl) const {
    if (ttl.count() <= 0) return std::nullopt;
    auto paused = parse_iso_time(paused_at);
    if (!paused) return std::nullopt;
    return *paused + ttl;
}

json paused_record::model(const std::vector<std::string>& languages, bool resuming,
                          std::chrono::seconds ttl) const {
    const auto expires = expires_at(ttl);
    return {{"id", id},
            {"owner", owner},
            {"kernel_id", nullptr},
            {"kernel", kernel},
            {"languages", languages},
            {"state", resuming ? "resuming" : "paused"},
            {"created_at", created_at},
            {"paused_at", paused_at},
            {"expires_at", expires ? json(format_iso_time(*expires)) : json(nullptr)},
            {"policy", kernels::to_string(policy)},
            {"one_shot", false},
            {"kernel_uses", 0},
            {"queued", 0},
            {"running", false},
            {"network", {{"allow", network_allow}}}};
}

paused_record_store::loaded paused_record_store::load(
    const std::function<bool(const paused_record&)>& snapshot_exists) {
    return json_record_store::load([&](const paused_record& record) {
        if (!snapshot_exists(record))
            throw std::invalid_argument("its snapshot " + record.snapshot_id +
                                        " is gone or unreadable");
    });
}

bool paused_table::add(paused_record record) {
    const std::string id = record.id;
    return entries_.emplace(id, entry{std::move(record), false, {}}).second;
}

const paused_record* paused_table::find(const std::string& id) const {
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : &it->second.record;
}

bool paused_table::resuming(const std::string& id) const {
    auto it = entries_.find(id);
    return it != entries_.end() && it->second.resuming;
}

std::vector<const paused_record*> paused_table::all() const {
    std::vector<const paused_record*> out;
    for (const auto& [id, e] : entries_) out.push_back(&e.record);
    return out;
}

paused_table::resume_start paused_table::start_resume(const std::string& id, waiter w) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return resume_start::unknown;
    it->second.waiters.push_back(std::move(w));
    if (it->second.resuming) return resume_start::joined;
    it->second.resuming = true;
    return resume_start::begin;
}

std::vector<paused_table::waiter> paused_table::finish_resume(const std::string& id, bool ok) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return {};
    auto waiters = std::move(it->second.waiters);
    it->second.waiters.clear();
    it->second.resuming = false;
    if (ok) entries_.erase(it);
    return waiters;
}

std::vector<std::string> paused_table::expired(std::chrono::system_clock::time_point now,
                                               std::chrono::seconds ttl) const {
    std::vector<std::string> out;
    for (const auto& [id, e] : entries_) {
        if (e.resuming) continue;
        if (auto at = e.record.expires_at(ttl); at && *at <= now) out.push_back(id);
    }
    return out;
}

paused_table::remove_result paused_table::remove(const std::string& id, paused_record* removed) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return remove_result::unknown;
    if (it->second.resuming) return remove_result::resuming;
    if (removed) *removed = std::move(it->second.record);
    entries_.erase(it);
    return remove_result::removed;
}

}  // namespace callisto::gateway::interpreter
