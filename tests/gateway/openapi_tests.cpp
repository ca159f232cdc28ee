// docs/openapi.json (the copy compiled into the server) checked against the route table
// (gateway/routes.cpp) both ways: every row is documented with its path and methods, every
// documented operation is a row, and each example reaches its row with its parameters. A route
// added without documentation, or documented without a route, fails here by name.

#include "gateway/http/openapi_document.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "gateway/routes.hpp"
#include "tests/gateway/route_table_matching.hpp"
#include "tests/support/source_file.hpp"

using namespace callisto::gateway;
using callisto::test::source_file;
using json = nlohmann::json;

namespace {

const json& document() {
    static const json doc = json::parse(openapi_document(), nullptr, false);
    return doc;
}

const std::set<std::string> http_methods = {"get",     "put",  "post",  "delete",
                                            "options", "head", "patch", "trace"};

// The routes OpenAPI cannot describe, each with why: the only rows the document may leave out.
const std::map<std::string_view, std::string_view> undocumented = {
    {"static_file", "the web UI: GET of any other path, files of a directory, not an API"},
};

// "/v1/contexts/{context_id}/files/{path...}" as OpenAPI writes it: "{path}".
std::string documented_path(std::string_view table_path) {
    std::string out(table_path);
    for (auto at = out.find("...}"); at != std::string::npos; at = out.find("...}"))
        out.erase(at, 3);
    return out;
}

std::vector<std::string_view> methods_of(const route_spec& spec) {
    std::vector<std::string_view> out;
    std::string_view rest = spec.methods;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view m = rest.substr(0, comma);
        while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
        out.push_back(m);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    return out;
}

// The table's row for a documented operation, or null.
const route_row* row_of(const std::string& path, const std::string& method) {
    for (const auto& row : route_table()) {
        if (documented_path(row.spec.path) != path) continue;
        for (auto m : methods_of(row.spec))
            if (m == method) return &row;
    }
    return nullptr;
}

// A local reference ("#/components/parameters/kernel_id") followed; nullptr if it dangles.
const json* resolve(const json& node) {
    const json* at = &node;
    for (int hops = 0; at->is_object() && at->contains("$ref"); ++hops) {
        const auto& ref = at->at("$ref");
        if (hops > 8 || !ref.is_string()) return nullptr;
        const std::string text = ref.get<std::string>();
        if (text.rfind("#/", 0) != 0) return nullptr;
        const json::json_pointer pointer(text.substr(1));
        if (!document().contains(pointer)) return nullptr;
        at = &document().at(pointer);
    }
    return at;
}

struct operation {
    std::string method;  // upper case, as on the wire
    std::string path;    // as documented: "/api/kernels/{kernel_id}"
    std::string target;  // with every {parameter} replaced by its example
    std::vector<std::pair<std::string, std::string>> path_values;  // name, example
    const json* spec = nullptr;
    std::string problem;  // why target could not be built
    std::string name() const { return method + " " + path; }
};

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    return s;
}

// Path parameters by name: the path item's, overridden by the operation's (OpenAPI's rule).
std::map<std::string, const json*> path_parameters(const json& item, const json& op) {
    std::map<std::string, const json*> out;
    for (const json* list : {&item, &op}) {
        if (!list->contains("parameters")) continue;
        for (const auto& p : list->at("parameters")) {
            const json* param = resolve(p);
            if (param && param->value("in", "") == "path") out[param->value("name", "")] = param;
        }
    }
    return out;
}

std::vector<operation> operations() {
    std::vector<operation> out;
    const json& doc = document();
    if (!doc.is_object() || !doc.contains("paths") || !doc["paths"].is_object()) return out;
    for (const auto& [path, item] : doc["paths"].items()) {
        for (const auto& [method, op] : item.items()) {
            if (!http_methods.count(method)) continue;
            operation o;
            o.method = upper(method);
            o.path = path;
            o.spec = &op;
            auto params = path_parameters(item, op);
            // Fill each {name} with the parameter's example.
            std::size_t pos = 0;
            while (pos < path.size()) {
                const auto open = path.find('{', pos);
                if (open == std::string::npos) {
                    o.target += path.substr(pos);
                    break;
                }
                const auto close = path.find('}', open);
                o.target += path.substr(pos, open - pos);
                const std::string name = path.substr(open + 1, close - open - 1);
                auto it = params.find(name);
                if (it == params.end()) {
                    o.problem = "{" + name + "} is not a declared path parameter";
                } else if (!it->second->contains("example") ||
                           !(*it->second)["example"].is_string()) {
                    o.problem = "path parameter {" + name + "} has no string example";
                } else {
                    const std::string value = (*it->second)["example"].get<std::string>();
                    o.target += value;
                    o.path_values.emplace_back(name, value);
                }
                pos = close == std::string::npos ? path.size() : close + 1;
            }
            out.push_back(std::move(o));
        }
    }
    return out;
}

route_match route_of(const operation& o) { return match_route(o.method, o.target, false); }

void collect_refs(const json& node, const std::string& where, std::vector<std::string>& dangling) {
    if (node.is_object()) {
        if (node.contains("$ref") && !resolve(node))
            dangling.push_back(where + ": " + node["$ref"].dump());
        for (const auto& [key, value] : node.items())
            collect_refs(value, where + "/" + key, dangling);
    } else if (node.is_array()) {
        for (std::size_t i = 0; i < node.size(); ++i)
            collect_refs(node[i], where + "/" + std::to_string(i), dangling);
    }
}

std::set<std::string> split_allow(const std::string& allow) {
    std::set<std::string> out;
    std::istringstream in(allow);
    for (std::string m; std::getline(in, m, ',');) {
        m.erase(0, m.find_first_not_of(' '));
        out.insert(m);
    }
    return out;
}

}  // namespace

TEST_CASE("the OpenAPI document is JSON with openapi, info and paths, and every $ref resolves") {
    const json& doc = document();
    REQUIRE_MESSAGE(!doc.is_discarded(), "docs/openapi.json is not valid JSON");
    REQUIRE(doc.is_object());
    REQUIRE(doc.contains("openapi"));
    CHECK(doc["openapi"].get<std::string>().rfind("3.", 0) == 0);
    REQUIRE(doc.contains("info"));
    CHECK(doc.at("info").at("title").is_string());
    CHECK(doc.at("info").at("version").is_string());
    REQUIRE(doc.contains("paths"));
    CHECK(doc["paths"].size() >= 10);
    std::vector<std::string> dangling;
    collect_refs(doc, "#", dangling);
    for (const auto& d : dangling) CHECK_MESSAGE(false, "unresolved $ref at " << d);
}

TEST_CASE("every route of the table is documented, with its path and each of its methods") {
    const json& paths = document().at("paths");
    std::set<std::string_view> names;
    for (const auto& row : route_table()) {
        const route_spec& spec = row.spec;
        INFO(spec.name << ": " << spec.methods << " " << spec.path);
        CHECK_MESSAGE(names.insert(spec.name).second, "a second route named " << spec.name);
        if (undocumented.count(spec.name)) continue;
        const std::string path = documented_path(spec.path);
        CHECK_MESSAGE(paths.contains(path),
                      "route " << spec.name << ": docs/openapi.json has no " << path);
        if (!paths.contains(path)) continue;
        for (auto method : methods_of(spec)) {
            std::string lower(method);
            std::transform(lower.begin(), lower.end(), lower.begin(),
                           [](unsigned char c) { return std::tolower(c); });
            CHECK_MESSAGE(paths.at(path).contains(lower), "route " << spec.name
                                                                   << ": docs/openapi.json has no "
                                                                   << method << " " << path);
        }
    }
    // The exceptions are rows of the table, so that the list cannot outlive them.
    for (const auto& [name, why] : undocumented) CHECK_MESSAGE(names.count(name), name);
}

TEST_CASE("every documented operation is a route of the table") {
    const auto ops = operations();
    REQUIRE(ops.size() >= 20);
    for (const auto& o : ops)
        CHECK_MESSAGE(row_of(o.path, o.method),
                      o.name() << " is documented, but the route table has no such route");
}

TEST_CASE("each documented example reaches its route, its parameters under their names") {
    std::set<std::string> ids;
    for (const auto& o : operations()) {
        INFO(o.name());
        CHECK_MESSAGE(o.problem.empty(), o.name() << ": " << o.problem);
        if (!o.problem.empty()) continue;
        const route_row* row = row_of(o.path, o.method);
        if (!row) continue;  // the test above names it
        const route_match r = route_of(o);
        CHECK_MESSAGE(r.name() == row->spec.name, o.name()
                                                      << " (as " << o.target << ") is routed to "
                                                      << r.name() << ", not to " << row->spec.name);
        if (!r.found()) continue;
        // Each example comes back out of the route under the name its handler reads.
        for (const auto& [name, value] : o.path_values) {
            CHECK_MESSAGE(r.param(name) == value, o.name() << ": {" << name << "} = '" << value
                                                           << "' is not what the router extracted");
            const json* param = path_parameters(document().at("paths").at(o.path), *o.spec)[name];
            if (param->contains("schema") && param->at("schema").value("format", "") == "uuid")
                CHECK_MESSAGE(is_valid_kernel_id(value),
                              o.name() << ": {" << name << "} example is not a lower-case UUID");
        }
        if (row->spec.path.find("...}") != std::string_view::npos)
            for (const auto& [name, value] : o.path_values)
                if (row->spec.path.find("{" + name + "...}") != std::string_view::npos)
                    CHECK_MESSAGE(value.find('/') != std::string::npos,
                                  o.name()
                                      << ": the {" << name << "} example should be nested (a/b/c)");
        REQUIRE_MESSAGE(o.spec->contains("operationId"), o.name() << " has no operationId");
        CHECK_MESSAGE(ids.insert(o.spec->at("operationId").get<std::string>()).second,
                      o.name() << ": operationId used twice");
    }
}

TEST_CASE("each documented path allows exactly the documented methods") {
    std::map<std::string, std::set<std::string>> methods;
    std::map<std::string, std::string> targets;
    for (const auto& o : operations()) {
        if (!o.problem.empty()) continue;
        methods[o.path].insert(o.method);
        targets[o.path] = o.target;
    }
    for (const auto& [path, documented] : methods) {
        // A method no route uses: the router answers 405 and lists what the path supports.
        const route_match r = match_route("PROPFIND", targets[path], false);
        REQUIRE_MESSAGE(r.result == route_match::outcome::method_not_allowed, path);
        CHECK_MESSAGE(split_allow(r.allow) == documented,
                      path << ": the router allows '" << r.allow << "', the document differs");
    }
}

TEST_CASE("exactly the open routes are documented without a token; admin and shedding answers") {
    for (const auto& o : operations()) {
        if (!o.problem.empty()) continue;
        const route_row* row = row_of(o.path, o.method);
        if (!row) continue;
        const bool open = o.spec->contains("security") && o.spec->at("security").empty();
        // 401 with a challenge, on every route that needs a token.
        const auto& responses = o.spec->at("responses");
        const bool refusal_documented = responses.contains("401");
        // Open to the dispatcher: no user's token asked.
        const bool table_open =
            row->spec.access == route_access::open || row->spec.access == route_access::own_token;
        const std::string why = open ? " is documented public, but the server wants a token"
                                     : " needs no token, but the document asks for one";
        CHECK_MESSAGE(open == table_open, o.name() << why);
        // A route with a credential of its own (E2B's data plane) is documented without the
        // user's token, and its handler answers 401 where that credential is wrong.
        if (row->spec.access == route_access::own_token)
            CHECK_MESSAGE(refusal_documented, o.name() << ": its own token refused: 401?");
        else
            CHECK_MESSAGE(refusal_documented == !open,
                          o.name() << ": 401 documented iff a token is needed");
        // An admin's route refuses others' tokens 403.
        if (row->spec.access == route_access::admin)
            CHECK_MESSAGE(responses.contains("403"), o.name() << ": an admin's route; 403?");
        // New work refused while the host is past its capacity: 503 with Retry-After.
        if (row->extras.sheds_load) {
            const json* busy = responses.contains("503") ? resolve(responses.at("503")) : nullptr;
            CHECK_MESSAGE(busy, o.name() << " sheds load: 503 should be documented");
            if (busy)
                CHECK_MESSAGE(busy->value("headers", json::object()).contains("Retry-After"),
                              o.name() << " sheds load: its 503 should document Retry-After");
        }
    }
}

TEST_CASE("every operation documents a success, JSON error bodies, Location and Retry-After") {
    for (const auto& o : operations()) {
        REQUIRE_MESSAGE(o.spec->contains("responses"), o.name() << " has no responses");
        bool success = false;
        for (const auto& [code, ref] : o.spec->at("responses").items()) {
            INFO(o.name() << " " << code);
            const json* res = resolve(ref);
            REQUIRE(res);
            CHECK_MESSAGE(res->contains("description"),
                          o.name() << " " << code << " has no description");
            if (code[0] == '1' || code[0] == '2') success = true;
            if (code[0] == '4' || code[0] == '5') {
                // {"reason", "message"} (or the culled variant), always as JSON.
                const json content = res->value("content", json::object());
                CHECK_MESSAGE(content.contains("application/json"),
                              o.name() << " " << code << " should be a JSON error body");
                if (content.contains("application/json")) {
                    const json* schema = resolve(content.at("application/json").at("schema"));
                    REQUIRE(schema);
                    const json required = schema->value("required", json::array());
                    auto needs = [&](const char* field) {
                        return std::find(required.begin(), required.end(), field) != required.end();
                    };
                    // {"reason", "message"}, or a JSON-RPC error object on /mcp; E2B's
                    // {"code", "message"} on the rows that declare E2B's errors.
                    const route_row* row = row_of(o.path, o.method);
                    const bool e2b = row && row->extras.errors == route_errors::e2b;
                    const bool error_shape = (needs("reason") && needs("message")) ||
                                             (needs("jsonrpc") && needs("error")) ||
                                             (e2b && needs("code") && needs("message"));
                    CHECK_MESSAGE(error_shape, o.name() << " " << code
                                                        << ": an error body has reason and message "
                                                           "(or is a JSON-RPC error)");
                }
            }
            const json headers = res->value("headers", json::object());
            if (code == "201")
                CHECK_MESSAGE(headers.contains("Location"), o.name()
                                                                << " 201 should document Location");
            if (code == "429")
                CHECK_MESSAGE(headers.contains("Retry-After"),
                              o.name() << " 429 should document Retry-After");
        }
        CHECK_MESSAGE(success, o.name() << " documents no success response");
    }
}

namespace {

// The rows of gateway/routes.cpp whose interpreter_api method resumes a paused context before
// it answers (resume_first, or its own resume), and the events WebSocket
// (paused_context_events): read from the sources, so a route that starts resuming is checked
// without anyone adding it here.
std::set<std::string> resuming_rows() {
    const std::string api = source_file("gateway/interpreter/api/interpreter_api.cpp");
    // Besides resume_first's: those that resume through their *_for operation (resume_then,
    // or resume itself), shared with the MCP tools.
    std::set<std::string> methods = {"create_execution", "create_snapshot", "fork_context",
                                     "resume_context"};
    const std::regex resume_first(R"(resume_first\(in, &interpreter_api::(\w+)\))");
    for (std::sregex_iterator it(api.begin(), api.end(), resume_first), end; it != end; ++it)
        methods.insert((*it)[1]);
    const std::string routes = source_file("gateway/routes.cpp");
    const std::regex row(
        R"re(\{\{"(\w+)", "[A-Z, ]+", "[^"]+"[^}]*\},\s*\w+<&interpreter_api::(\w+)>)re");
    std::set<std::string> rows = {"context_events"};
    for (std::sregex_iterator it(routes.begin(), routes.end(), row), end; it != end; ++it)
        if (methods.contains((*it)[2])) rows.insert((*it)[1]);
    return rows;
}

}  // namespace

TEST_CASE("every route that resumes a paused context documents what a failed resume answers") {
    // What interpreter_api::resume can answer (the context stays paused): 403 its network
    // allowance is past the ceilings now; 404 its kernelspec or state is gone; 409 its id is
    // taken (kernel_error::id_taken); 413 and 507 its files do not fit the new workdir; 422
    // its state is damaged; 429 a kernel limit; 500 the kernel could not start or load it;
    // 503 the server is stopping or past its capacity. (400 only for a snapshot of another
    // language, which a paused context never holds.)
    const std::set<std::string> failures = {"403", "404", "409", "413", "422",
                                            "429", "500", "503", "507"};
    const auto rows = resuming_rows();
    // The routes that resume today, so a broken scan of the sources fails here, not silently.
    for (const char* known :
         {"context_restart", "executions_list", "execution_create", "execution_get",
          "execution_delete", "files_list", "files_upload", "file_get", "file_put", "file_delete",
          "snapshot_create", "context_resume", "context_fork", "context_events"})
        CHECK_MESSAGE(rows.contains(known), std::string(known) << " resumes a paused context");
    for (const auto& r : route_table()) {
        if (!rows.contains(std::string(r.spec.name))) continue;
        for (const auto& method : methods_of(r.spec)) {
            std::string lower(method);
            for (auto& c : lower) c = static_cast<char>(std::tolower(c));
            const auto& op = document()["paths"][documented_path(r.spec.path)][lower];
            for (const auto& status : failures)
                CHECK_MESSAGE(op["responses"].contains(status),
                              r.spec.name << " (" << method << " " << r.spec.path
                                          << ") resumes a paused context but does not document "
                                          << status << ", which a failed resume answers");
        }
    }
}
