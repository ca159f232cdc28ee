#include "launcher/zygote/zygote_protocol.hpp"

#include <limits>
#include <stdexcept>

#include "kernelproto/untrusted_json.hpp"

namespace callisto::launcher::zygote_protocol {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& what) {
    throw std::invalid_argument("zygote message: " + what);
}

const json& field(const json& j, const char* name) {
    const auto it = j.find(name);
    if (it == j.end()) bad(std::string("'") + name + "' is missing");
    return *it;
}

std::string text(const json& j, const char* name) {
    const auto& v = field(j, name);
    if (!v.is_string()) bad(std::string("'") + name + "' is not a string");
    return v.get<std::string>();
}

template <class T>
T whole(const json& v, const char* name) {
    if (!v.is_number_integer()) bad(std::string("'") + name + "' is not a whole number");
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
            bad(std::string("'") + name + "' is out of range");
        return static_cast<T>(u);
    }
    const auto s = v.get<std::int64_t>();
    if (s < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
        (s > 0 &&
         static_cast<std::uint64_t>(s) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
        bad(std::string("'") + name + "' is out of range");
    return static_cast<T>(s);
}

template <class T>
T whole(const json& j, const char* name, int) {
    return whole<T>(field(j, name), name);
}

std::vector<std::string> strings(const json& j, const char* name) {
    const auto& v = field(j, name);
    if (!v.is_array()) bad(std::string("'") + name + "' is not a list");
    std::vector<std::string> out;
    for (const auto& item : v) {
        if (!item.is_string()) bad(std::string("'") + name + "' holds a non-string");
        out.push_back(item.get<std::string>());
    }
    return out;
}

json parse_object(const std::string& bytes) {
    auto parsed = kernelproto::parse_untrusted_json(bytes);
    if (!parsed.ok()) bad(parsed.problem());
    if (!parsed.value.is_object()) bad("not an object");
    return std::move(parsed.value);
}

}  // namespace

std::string encode_fork(std::uint64_t id, const spawn_description& what) {
    if (!what.zygote) throw std::invalid_argument("encode_fork: the spawn has no zygote_fork");
    const auto& fork = *what.zygote;
    json rlimits = json::array();
    for (const auto& l : what.rlimits) rlimits.push_back({l.resource, l.soft, l.hard});
    json cgroups = json::array();
    for (const auto& f : what.cgroup_procs_files) cgroups.push_back(f.string());
    json j = {{"op", "fork"},
              {"id", id},
              {"argv", fork.argv},
              {"cwd", fork.cwd.string()},
              {"uid", what.uid ? json(*what.uid) : json()},
              {"gid", what.gid ? json(*what.gid) : json()},
              {"rlimits", std::move(rlimits)},
              {"cgroup_procs", std::move(cgroups)},
              {"layout", fork.layout ? fork.layout->to_json() : json()},
              {"outlive", what.outlive_gateway}};
    return j.dump();
}

std::string encode(const signal_order& o) {
    return json{{"op", "signal"}, {"pid", o.pid}, {"signal", o.signal}}.dump();
}

std::string encode(const terminate_order& o) {
    return json{{"op", "terminate"}, {"pid", o.pid}, {"grace_ms", o.grace_ms}}.dump();
}

order decode_order(const std::string& bytes) {
    const json j = parse_object(bytes);
    const std::string op = text(j, "op");
    if (op == "signal") {
        signal_order o{whole<pid_t>(j, "pid", 0), whole<int>(j, "signal", 0)};
        if (o.pid <= 0) bad("'pid' must be positive");
        return o;
    }
    if (op == "terminate") {
        terminate_order o{whole<pid_t>(j, "pid", 0), whole<std::uint64_t>(j, "grace_ms", 0)};
        if (o.pid <= 0) bad("'pid' must be positive");
        return o;
    }
    if (op != "fork") bad("unknown op '" + op + "'");

    fork_order o;
    o.id = whole<std::uint64_t>(j, "id", 0);
    o.argv = strings(j, "argv");
    if (o.argv.empty()) bad("'argv' is empty");
    o.cwd = text(j, "cwd");
    if (const auto& uid = field(j, "uid"); !uid.is_null()) o.uid = whole<uid_t>(uid, "uid");
    if (const auto& gid = field(j, "gid"); !gid.is_null()) o.gid = whole<gid_t>(gid, "gid");
    const auto& limits = field(j, "rlimits");
    if (!limits.is_array()) bad("'rlimits' is not a list");
    for (const auto& l : limits) {
        if (!l.is_array() || l.size() != 3) bad("an rlimit is not [resource, soft, hard]");
        o.rlimits.push_back({whole<int>(l[0], "rlimit resource"),
                             whole<unsigned long>(l[1], "rlimit soft"),
                             whole<unsigned long>(l[2], "rlimit hard")});
    }
    for (auto& f : strings(j, "cgroup_procs")) o.cgroup_procs_files.emplace_back(std::move(f));
    if (const auto it = j.find("outlive"); it != j.end()) {
        if (!it->is_boolean()) bad("'outlive' is not a boolean");
        o.outlive_gateway = it->get<bool>();
    }
    if (const auto& layout = field(j, "layout"); !layout.is_null()) {
        try {
            o.layout = sandbox_layout::from_json(layout);
        } catch (const std::invalid_argument& e) {
            bad(e.what());
        }
    }
    return o;
}

std::string encode_environment(const std::map<std::string, std::string>& env) {
    return json(env).dump();
}

std::map<std::string, std::string> decode_environment(const std::string& text) {
    const json j = parse_object(text);
    std::map<std::string, std::string> env;
    for (const auto& [key, value] : j.items()) {
        if (!value.is_string()) bad("the environment holds a non-string");
        env[key] = value.get<std::string>();
    }
    return env;
}

std::string encode(const ready_event& e) {
    return json{{"event", "ready"},         {"python", e.python},
                {"preloaded", e.preloaded}, {"failed", e.failed},
                {"seconds", e.seconds},     {"prefaulted_pages", e.prefaulted_pages}}
        .dump();
}

std::string encode(const forked_event& e) {
    return json{{"event", "forked"}, {"id", e.id}, {"pid", e.pid}}.dump();
}

std::string encode(const fork_failed_event& e) {
    return json{{"event", "fork_failed"}, {"id", e.id}, {"error", e.error}}.dump();
}

std::string encode(const exited_event& e) {
    return json{{"event", "exited"}, {"pid", e.pid}, {"status", e.status}}.dump();
}

event decode_event(const std::string& bytes) {
    const json j = parse_object(bytes);
    const std::string name = text(j, "event");
    if (name == "forked") {
        forked_event e{whole<std::uint64_t>(j, "id", 0), whole<pid_t>(j, "pid", 0)};
        if (e.pid <= 0) bad("'pid' must be positive");
        return e;
    }
    if (name == "fork_failed")
        return fork_failed_event{whole<std::uint64_t>(j, "id", 0), text(j, "error")};
    if (name == "exited") {
        exited_event e{whole<pid_t>(j, "pid", 0), whole<int>(j, "status", 0)};
        if (e.pid <= 0) bad("'pid' must be positive");
        return e;
    }
    if (name != "ready") bad("unknown event '" + name + "'");
    ready_event e;
    e.python = text(j, "python");
    e.preloaded = strings(j, "preloaded");
    const auto& failed = field(j, "failed");
    if (!failed.is_object()) bad("'failed' is not an object");
    for (const auto& [module, why] : failed.items()) {
        if (!why.is_string()) bad("'failed' holds a non-string");
        e.failed[module] = why.get<std::string>();
    }
    const auto& seconds = field(j, "seconds");
    if (!seconds.is_number()) bad("'seconds' is not a number");
    e.seconds = seconds.get<double>();
    e.prefaulted_pages = whole<std::uint64_t>(j, "prefaulted_pages", 0);
    return e;
}

}  // namespace callisto::launcher::zygote_protocol
