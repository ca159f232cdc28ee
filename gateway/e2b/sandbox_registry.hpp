#pragma once
// E2B sandboxes: who owns each, its template, metadata and access tokens, its contexts
// (interpreter contexts, by id) and when it ends. Bookkeeping, no kernels: the clock and the
// token source are passed in, so lifetimes are tested without sleeping; with a record store
// (--state-dir), every change is written down as it is made, for the next gateway.
// Thread-safe (one mutex): the HTTP threads and the culling timer share it.

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/e2b/sandbox_record.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::e2b {

class sandbox_registry {
public:
    using clock_fn = std::function<std::chrono::system_clock::time_point()>;
    using token_fn = std::function<std::string()>;

    sandbox_registry(clock_fn now, token_fn new_token, sandbox_record_store* records = nullptr);

    // A new sandbox's record, not yet added: a fresh id and tokens, started now, ending after
    // `timeout`.
    sandbox_record make(std::string template_id, std::string kernel, user owner,
                        std::map<std::string, std::string> metadata,
                        std::chrono::seconds timeout) const;
    // Adds it (an earlier gateway's, restored, too), and writes it down.
    void add(sandbox_record record);

    // The caller's sandbox (an admin: any), or nullopt for an unknown one or another's.
    std::optional<sandbox_record> find_for(std::string_view id, const user& who) const;
    // The sandbox a data-plane request names, when it carries either of its tokens (compared
    // in constant time); nullopt otherwise, whatever the reason.
    std::optional<sandbox_record> find_by_token(std::string_view id, std::string_view envd_token,
                                                std::string_view traffic_token) const;
    std::vector<sandbox_record> list_for(const user& who) const;
    // Every sandbox, whoever owns it (the admin console's list).
    std::vector<sandbox_record> all() const;
    std::size_t count_for(const std::string& owner) const;

    // The sandbox now ends `timeout` from now (E2B's setTimeout and connect). False: no such
    // sandbox of the caller's.
    bool set_timeout(std::string_view id, const user& who, std::chrono::seconds timeout);
    // A context joins or leaves the sandbox. False: the sandbox is gone.
    bool add_context(std::string_view id, sandbox_context context);
    bool remove_context(std::string_view id, const std::string& context_id);
    // The sandbox, removed: its contexts are the caller's to close.
    std::optional<sandbox_record> remove(std::string_view id, const user& who);
    // Every sandbox past its end, removed.
    std::vector<sandbox_record> take_expired();
    std::vector<sandbox_record> take_all();

private:
    // Under the lock: the records are written in the order of the changes.
    void write_down(const sandbox_record& record);
    void cross_out(const std::string& id);

    clock_fn now_;
    token_fn new_token_;
    sandbox_record_store* records_;  // null: kept in memory only
    mutable std::mutex mutex_;
    std::map<std::string, sandbox_record, std::less<>> sandboxes_;
};

// A sandbox id as this registry makes them (20 lower-case letters and digits, as E2B's): data
// plane ids are checked against it before any lookup, and host names are parsed with it.
bool is_valid_sandbox_id(std::string_view id);

}  // namespace callisto::gateway::e2b
