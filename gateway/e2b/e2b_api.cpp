#include "gateway/e2b/e2b_api.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <map>
#include <set>
#include <variant>

#include <openssl/rand.h>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/e2b/connect_envelope.hpp"
#include "gateway/e2b/directory_watch.hpp"
#include "gateway/e2b/e2b_errors.hpp"
#include "gateway/e2b/envd_files.hpp"
#include "gateway/e2b/envd_upload.hpp"
#include "gateway/e2b/execution_stream.hpp"
#include "gateway/e2b/filesystem_rpc.hpp"
#include "gateway/e2b/process_rpc.hpp"
#include "gateway/e2b/process_stream.hpp"
#include "gateway/e2b/sandbox_process.hpp"
#include "gateway/e2b/stream_keepalive.hpp"
#include "gateway/e2b/watch_rpc.hpp"
#include "gateway/http/beast.hpp"
#include "gateway/http/content_headers.hpp"
#include "gateway/http/json_response.hpp"
#include "gateway/interpreter/context_request.hpp"
#include "kernelproto/iso_time.hpp"
#include "launcher/sandbox/sandbox_command.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"

namespace callisto::gateway::e2b {

namespace {

using nlohmann::json;

// The envd version the SDK is told: 0.5.7 lets it upload as application/octet-stream.
constexpr const char* envd_version = "0.5.7";

std::string random_token() {
    unsigned char bytes[24];
    if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 15]);
    }
    return out;
}

json connection_answer(const sandbox_record& box) {
    return {{"sandboxID", box.id},
            {"templateID", box.template_id},
            {"clientID", "callisto"},
            {"envdVersion", envd_version},
            {"envdAccessToken", box.envd_token},
            {"trafficAccessToken", box.traffic_token},
            {"domain", nullptr}};
}

json info_of(const sandbox_record& box) {
    json metadata = json::object();
    for (const auto& [k, v] : box.metadata) metadata[k] = v;
    return {{"sandboxID", box.id},
            {"templateID", box.template_id},
            {"alias", box.kernel},
            {"clientID", "callisto"},
            {"envdVersion", envd_version},
            {"startedAt", kernelproto::format_iso_time(box.started_at)},
            {"endAt", kernelproto::format_iso_time(box.end_at)},
            {"state", "running"},
            {"cpuCount", 1},
            {"memoryMB", 0},
            {"diskSizeMB", 0},
            {"metadata", metadata},
            // Callisto denies every destination not listed (E2B's denyOut of all traffic).
            {"allowInternetAccess", false},
            {"network", {{"allowOut", box.network_allow}, {"denyOut", {"0.0.0.0/0"}}}}};
}

// Where a new context's code starts, as its kernel names it: E2B's cwd, a directory of the
// sandbox's tree (under /home/user, or relative to it); /home/user when none is asked. A cwd
// that is not such a directory is refused (a 400 whatever the reason).
std::variant<std::string, envd_error> start_directory(const std::string& asked,
                                                      const std::filesystem::path& workdir) {
    if (asked.empty()) return std::string(launcher::sandbox_home);
    envd_error e;
    auto where = resolve_envd_path(asked, e);
    if (!where) return e;
    envd_entry entry;
    if (auto why = envd_files(workdir).stat(*where, entry)) return *why;
    if (entry.type != envd_file_type::directory)
        return envd_error{connect_code::invalid_argument, 400, asked + " is not a directory"};
    return envd_path_of(*where);  // /home/user is the tree, as E2B and the kernel name it
}

json context_json(const sandbox_context& c) {
    return {{"id", c.id}, {"language", c.language}, {"cwd", c.cwd}};
}

http_response no_such_sandbox(std::string_view id) {
    return e2b_error(http::status::not_found, "sandbox \"" + std::string(id) + "\" not found");
}

http_response no_such_context(std::string_view id) {
    return e2b_error(http::status::not_found, "context \"" + std::string(id) + "\" not found");
}

// The control plane's {sandbox_id}, or none when it cannot name a sandbox (answered 404).
std::optional<std::string> sandbox_param(const incoming_request& in) {
    const std::string& id = in.where.param("sandbox_id");
    if (is_valid_sandbox_id(id)) return id;
    in.respond(no_such_sandbox(id));
    return std::nullopt;
}

// What a refused kernel start becomes: the quotas' 429 and the server's 503 are the SDK's
// RateLimitError and ServiceBusyError.
http_response start_refused(kernels::kernel_error error, const std::string& message) {
    switch (error) {
        case kernels::kernel_error::user_over_limit:
        case kernels::kernel_error::server_over_limit: {
            auto res = e2b_error(http::status::too_many_requests, message);
            res.set(http::field::retry_after, "10");
            return res;
        }
        case kernels::kernel_error::shutting_down:
            return e2b_error(http::status::service_unavailable, message);
        case kernels::kernel_error::no_such_kernelspec:
            return e2b_error(http::status::bad_request, message);
        default: return e2b_error(http::status::internal_server_error, message);
    }
}

// "metadata=k1%3Dv1%26k2%3Dv2": the list's filter, as the SDK encodes it.
bool matches_metadata(const sandbox_record& box, const std::string& filter) {
    std::string_view rest = filter;
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
        if (pair.empty()) continue;
        const auto eq = pair.find('=');
        std::string key, value;
        if (!percent_decode(pair.substr(0, eq), key) ||
            !percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), value))
            return false;
        auto it = box.metadata.find(key);
        if (it == box.metadata.end() || it->second != value) return false;
    }
    return true;
}

}  // namespace

std::string sandbox_id_from_host(std::string_view host, std::string_view domain) {
    // A port after the name (an IPv6 literal has no sandbox in it either way).
    if (const auto colon = host.rfind(':'); colon != std::string_view::npos)
        host = host.substr(0, colon);
    const auto dot = host.find('.');
    const std::string_view label = host.substr(0, dot);
    const auto dash = label.find('-');
    if (dash == std::string_view::npos) return {};
    if (!domain.empty()) {
        // Exactly one label before the domain (DNS names are case-insensitive; a trailing dot
        // is the same name), and E2B's port first.
        std::string rest(dot == std::string_view::npos ? "" : host.substr(dot + 1));
        if (!rest.empty() && rest.back() == '.') rest.pop_back();
        std::transform(rest.begin(), rest.end(), rest.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        const std::string_view port = label.substr(0, dash);
        if (rest != domain || port.empty() || port.size() > 5 ||
            !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return {};
    }
    return std::string(label.substr(dash + 1));
}

std::string sandbox_id_of(const http_request& req, std::string_view domain) {
    if (auto id = req["E2b-Sandbox-Id"]; !id.empty()) return std::string(id);
    return sandbox_id_from_host(req[http::field::host], domain);
}

e2b_api::e2b_api(boost::asio::io_context& ioc, interpreter::context_registry& contexts,
                 std::vector<std::string> kernelspecs, e2b_settings settings, logger log)
    : ioc_(ioc),
      contexts_(contexts),
      settings_(std::move(settings)),
      templates_(settings_.templates, std::move(kernelspecs), settings_.default_templates),
      log_(std::move(log)),
      sandboxes_([] { return std::chrono::system_clock::now(); }, random_token, settings_.records),
      cull_timer_(boost::asio::make_strand(ioc)) {}

void e2b_api::restore() {
    if (!settings_.records) return;
    auto loaded = settings_.records->load();
    for (const auto& problem : loaded.problems)
        log_.warn("unreadable E2B sandbox record removed: " + problem);
    std::set<std::string> claimed;
    const auto now = std::chrono::system_clock::now();
    for (auto& box : loaded.records) {
        std::string why;
        if (box.end_at <= now)
            why = "it reached its timeout while the gateway was down";
        else if (!contexts_.find_for(box.default_context, box.owner))
            why = "its default context " + box.default_context + " did not come back";
        if (!why.empty()) {
            log_.info("sandbox " + box.id + " of " + box.owner.name + " is not restored: " + why);
            settings_.records->remove(box.id);
            close_contexts(box);
            continue;
        }
        // A second context whose kernel was not adopted is gone from it.
        std::erase_if(box.contexts, [&](const sandbox_context& c) {
            const bool back = contexts_.find_for(c.id, box.owner) != nullptr;
            if (!back)
                log_.info("sandbox " + box.id + ": its context " + c.id + " did not come back");
            return !back;
        });
        for (const auto& c : box.contexts) claimed.insert(c.id);
        log_.info("sandbox " + box.id + " of " + box.owner.name + " restored with " +
                  std::to_string(box.contexts.size()) + " context(s)");
        sandboxes_.add(std::move(box));
    }
    // An E2B context no sandbox claims (its record lost) would hold a kernel nobody can reach.
    for (const auto& context : contexts_.list_for(user{.name = {}, .admin = true}))
        if (context->options().via_e2b && !claimed.contains(context->id())) {
            log_.info("context " + context->id() + " of " + context->owner() +
                      " is closed: no E2B sandbox claims it");
            contexts_.remove(context, [] {});
        }
}

void e2b_api::start() {
    boost::asio::post(cull_timer_.get_executor(), [this] { arm_culling(); });
}

void e2b_api::stop() {
    boost::asio::post(cull_timer_.get_executor(), [this] {
        stopped_ = true;
        cull_timer_.cancel();
    });
    // The server stops its kernels: the sandboxes end, and no record of them is kept. (A
    // gateway that leaves its kernels running for the next, SIGUSR2, never gets here.)
    sandboxes_.take_all();
}

void e2b_api::arm_culling() {
    if (stopped_) return;
    cull_timer_.expires_after(settings_.cull_every);
    cull_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec || stopped_) return;
        for (const auto& box : sandboxes_.take_expired()) {
            log_.info("sandbox " + box.id + " of " + box.owner.name +
                      " reached its timeout: culled with its contexts");
            close_contexts(box);
        }
        arm_culling();
    });
}

void e2b_api::close_contexts(const sandbox_record& box) {
    // Its commands first: a kernel kept for reuse must not carry them into another sandbox.
    kill_processes(box.id);
    watchers_.remove_sandbox(box.id);
    for (const auto& c : box.contexts)
        if (auto context = contexts_.find_for(c.id, box.owner)) contexts_.remove(context, [] {});
}

std::shared_ptr<interpreter::interpreter_context> e2b_api::context_of(const sandbox_record& box,
                                                                      const std::string& id) const {
    const bool ours = std::any_of(box.contexts.begin(), box.contexts.end(),
                                  [&](const sandbox_context& c) { return c.id == id; });
    return ours ? contexts_.find_for(id, box.owner) : nullptr;
}

std::vector<sandbox_summary> e2b_api::all_sandboxes() const {
    std::vector<sandbox_summary> out;
    for (auto& box : sandboxes_.all()) {
        const auto commands = processes_.count(box.id);
        out.push_back({std::move(box), commands});
    }
    return out;
}

void e2b_api::list_sandboxes(incoming_request in) {
    const std::string filter = query_param(in.where.query, "metadata");
    json list = json::array();
    for (const auto& box : sandboxes_.list_for(*in.who))
        if (matches_metadata(box, filter)) list.push_back(info_of(box));
    in.respond(json_response(http::status::ok, list));
}

void e2b_api::get_sandbox(incoming_request in) {
    auto id = sandbox_param(in);
    if (!id) return;
    auto box = sandboxes_.find_for(*id, *in.who);
    if (!box) return in.respond(no_such_sandbox(*id));
    in.respond(json_response(http::status::ok, info_of(*box)));
}

void e2b_api::kill_sandbox(incoming_request in) {
    auto id = sandbox_param(in);
    if (!id) return;
    auto box = sandboxes_.remove(*id, *in.who);
    if (!box) return in.respond(no_such_sandbox(*id));
    log_.info("sandbox " + box->id + " of " + box->owner.name + " killed");
    close_contexts(*box);
    in.respond(empty_response(http::status::no_content));
}

void e2b_api::set_timeout(incoming_request in) {
    auto id = sandbox_param(in);
    if (!id) return;
    std::string error;
    auto timeout = parse_set_timeout(in.req.body(), settings_.limits, error);
    if (!timeout) return in.respond(e2b_error(http::status::bad_request, error));
    if (!sandboxes_.set_timeout(*id, *in.who, *timeout)) return in.respond(no_such_sandbox(*id));
    in.respond(empty_response(http::status::no_content));
}

void e2b_api::connect(incoming_request in) {
    auto id = sandbox_param(in);
    if (!id) return;
    std::string error;
    auto timeout = parse_connect(in.req.body(), settings_.limits, error);
    if (!error.empty()) return in.respond(e2b_error(http::status::bad_request, error));
    if (timeout && !sandboxes_.set_timeout(*id, *in.who, *timeout))
        return in.respond(no_such_sandbox(*id));
    auto box = sandboxes_.find_for(*id, *in.who);
    if (!box) return in.respond(no_such_sandbox(*id));
    in.respond(json_response(http::status::ok, connection_answer(*box)));
}

void e2b_api::create_sandbox(incoming_request in) {
    const user& who = *in.who;
    std::string error;
    auto request = parse_create_sandbox(in.req.body(), settings_.limits, error);
    if (!request) return in.respond(e2b_error(http::status::bad_request, error));
    auto chosen = templates_.resolve(request->template_id, contexts_.default_kernel(), error);
    if (!chosen) return in.respond(e2b_error(http::status::bad_request, error));
    interpreter::context_request cr;
    cr.kernel = chosen->kernel;
    cr.network_allow = request->network_allow;
    // The same ceilings and the same 403 as POST /v1/contexts {"network"}, in E2B's shape.
    if (!cr.network_allow.empty())
        if (auto why = interpreter::network_refusal(
                cr.network_allow, contexts_.settings().egress_allow, who.egress_allow))
            return in.respond(e2b_error(http::status::forbidden, *why));
    cr.via_e2b = true;
    cr.start_dir = cr.home = launcher::sandbox_home;
    // The client's timeout, else its template's, else E2B's 5 minutes.
    const auto timeout =
        request->timeout.value_or(chosen->timeout.value_or(settings_.default_timeout));
    contexts_.create(
        cr, who,
        [this, who, chosen = std::move(*chosen), request = std::move(*request), timeout,
         respond = std::move(in.respond)](interpreter::create_context_result r) mutable {
            if (!r.context) return respond(start_refused(r.error, r.message));
            auto box = sandboxes_.make(std::move(chosen.name), std::move(chosen.kernel), who,
                                       std::move(request.metadata), timeout);
            box.env = std::move(request.env);
            box.network_allow = std::move(request.network_allow);
            box.default_context = r.context->id();
            box.contexts.push_back({r.context->id(), "python", launcher::sandbox_home});
            log_.info("sandbox " + box.id + " (" + box.template_id + ", " + box.kernel + ") for " +
                      who.name + " on context " + r.context->id());
            auto answer = connection_answer(box);
            sandboxes_.add(std::move(box));
            auto res = json_response(http::status::created, answer);
            res.set(http::field::location, "/sandboxes/" + answer["sandboxID"].get<std::string>());
            respond(std::move(res));
        });
}

std::optional<sandbox_record> e2b_api::sandbox_of(const incoming_request& in) const {
    const std::string id = sandbox_id_of(in.req, settings_.domain);
    if (!is_valid_sandbox_id(id)) {
        in.respond(e2b_error(http::status::not_found,
                             "no sandbox named: send E2b-Sandbox-Id or use its host name"));
        return std::nullopt;
    }
    auto box =
        sandboxes_.find_by_token(id, in.req["X-Access-Token"], in.req["E2B-Traffic-Access-Token"]);
    // Unknown, or not this sandbox's token: the same answer, so ids cannot be probed.
    if (!box)
        in.respond(
            e2b_error(http::status::unauthorized, "unknown sandbox, or not its access token"));
    return box;
}

void e2b_api::health(incoming_request in) {
    // E2B's proxy answers 502 for a sandbox that is gone: isRunning() is then false.
    const std::string id = sandbox_id_of(in.req, settings_.domain);
    auto box =
        sandboxes_.find_by_token(id, in.req["X-Access-Token"], in.req["E2B-Traffic-Access-Token"]);
    in.respond(box ? empty_response(http::status::no_content)
                   : e2b_error(http::status::bad_gateway, "the sandbox is not running"));
}

void e2b_api::list_contexts(incoming_request in) {
    auto box = sandbox_of(in);
    if (!box) return;
    json list = json::array();
    for (const auto& c : box->contexts) {
        // One whose kernel is gone (after a restart, a kernel that could not be adopted) is
        // no longer the sandbox's.
        if (!contexts_.find_for(c.id, box->owner)) {
            sandboxes_.remove_context(box->id, c.id);
            continue;
        }
        list.push_back(context_json(c));
    }
    in.respond(json_response(http::status::ok, list));
}

std::shared_ptr<interpreter::interpreter_context> e2b_api::path_context(
    const incoming_request& in, std::string& sandbox_id) const {
    auto box = sandbox_of(in);
    if (!box) return nullptr;
    const std::string& id = in.where.param("context_id");
    auto context = context_of(*box, id);
    if (!context) in.respond(no_such_context(id));
    sandbox_id = box->id;
    return context;
}

void e2b_api::delete_context(incoming_request in) {
    std::string sandbox_id;
    auto context = path_context(in, sandbox_id);
    if (!context) return;
    sandboxes_.remove_context(sandbox_id, context->id());
    contexts_.remove(context, [respond = std::move(in.respond)] {
        respond(empty_response(http::status::no_content));
    });
}

void e2b_api::restart_context(incoming_request in) {
    std::string sandbox_id;
    auto context = path_context(in, sandbox_id);
    if (!context) return;
    context->restart([respond = std::move(in.respond)](std::string error) {
        respond(error.empty()
                    ? empty_response(http::status::no_content)
                    : e2b_error(http::status::internal_server_error, "restart failed: " + error));
    });
}

e2b_api::~e2b_api() { file_pool_.join(); }

std::optional<std::filesystem::path> e2b_api::files_of(const incoming_request& in) const {
    auto box = sandbox_of(in);
    if (!box) return std::nullopt;
    return files_of(in, *box);
}

std::optional<std::filesystem::path> e2b_api::files_of(const incoming_request& in,
                                                       const sandbox_record& box) const {
    // The sandbox's tree is its default context's workdir, which its other contexts share.
    auto context = context_of(box, box.default_context);
    if (!context) {
        in.respond(e2b_error(http::status::service_unavailable,
                             "the sandbox's files are not available: its context is gone"));
        return std::nullopt;
    }
    return context->workdir();
}

void e2b_api::read_file(incoming_request in) {
    auto workdir = files_of(in);
    if (!workdir) return;
    boost::asio::post(file_pool_, [this, in = std::move(in), workdir = *workdir]() mutable {
        read_file_now(std::move(in), workdir);
    });
}

void e2b_api::write_file(incoming_request in) {
    auto workdir = files_of(in);
    if (!workdir) return;
    boost::asio::post(file_pool_, [this, in = std::move(in), workdir = *workdir]() mutable {
        write_file_now(std::move(in), workdir);
    });
}

namespace {

// A streaming call refused: 200 with only the end frame, as Connect answers.
http_response stream_refusal(connect_code code, std::string_view message) {
    http_response res{http::status::ok, 11};
    res.set(http::field::content_type, "application/connect+json");
    res.body() = stream_error_body(code, message);
    res.prepare_payload();
    return res;
}

bool is_connect_json(const http_request& req) {
    const auto type = req[http::field::content_type];
    return beast::iequals(type.substr(0, type.find(';')), "application/connect+json");
}

http_response not_connect_json() {
    auto res = connect_error(connect_code::unimplemented,
                             "send the stream as application/connect+json (Connect's JSON codec)");
    res.result(http::status::unsupported_media_type);
    return res;
}

// The request message of a server-streaming method (WatchDir, Start, Connect): one Connect
// envelope in an application/connect+json body. Nullopt once `respond` has had the refusal.
std::optional<std::string> streamed_request_message(const http_request& req,
                                                    const respond_fn& respond) {
    if (!is_connect_json(req)) {
        respond(not_connect_json());
        return std::nullopt;
    }
    std::error_code ec;
    auto message = decode_request_message(req.body(), req.body().size(), ec);
    if (!message)
        respond(stream_refusal(connect_code::invalid_argument,
                               "a malformed Connect envelope: " + ec.message()));
    return message;
}

// A server-streaming method's request, its message parsed by `parse(message, code, error)`
// (one of the parse_ functions of *_rpc.hpp). Nullopt once `respond` has had the refusal.
template <typename Parse>
auto streamed_request(const http_request& req, const respond_fn& respond, Parse parse)
    -> decltype(parse(std::string_view(), std::declval<connect_code&>(),
                      std::declval<std::string&>())) {
    auto message = streamed_request_message(req, respond);
    if (!message) return std::nullopt;
    connect_code code = connect_code::invalid_argument;
    std::string error;
    auto request = parse(*message, code, error);
    if (!request) respond(stream_refusal(code, error));
    return request;
}

// A unary method's request, its JSON body parsed by `parse` as above. Nullopt once `in` has
// had Connect's error.
template <typename Parse>
auto unary_request(const incoming_request& in, Parse parse) {
    connect_code code = connect_code::invalid_argument;
    std::string error;
    auto request = parse(in.req.body(), code, error);
    if (!request) in.respond(connect_error(code, error));
    return request;
}

}  // namespace

void e2b_api::watch_dir(incoming_request in, const std::filesystem::path& workdir,
                        const interpreter::take_stream_fn& take_stream) {
    auto& respond = in.respond;
    auto request = streamed_request(in.req, respond, parse_watch_dir);
    if (!request) return;
    auto opened = directory_watch::open(ioc_, workdir, *request);
    if (auto* refused = std::get_if<envd_error>(&opened))
        return respond(stream_refusal(refused->code, refused->message));
    auto watch = std::get<std::shared_ptr<directory_watch>>(opened);
    auto out = take_stream();
    out->begin(http::status::ok, {}, "application/connect+json");
    out->write_bytes(watch_start_frame());
    auto keepalive = std::make_shared<stream_keepalive>(ioc_, out, settings_.keepalive_every,
                                                        watch_keepalive_frame());
    keepalive->start();
    out->watch_client([watch, keepalive] {
        watch->stop();
        keepalive->stop();
    });
    watch->run(
        [out](const std::string& name, const std::string& event_type) {
            out->write_bytes(watch_event_frame(name, event_type));
        },
        [out, keepalive] {
            // The watched directory went: the stream ends, as envd's does.
            keepalive->stop();
            out->write_bytes(encode_envelope(end_flag, "{}"));
            out->end();
        });
}

void e2b_api::create_watcher(incoming_request in, const std::string& sandbox_id,
                             const std::filesystem::path& workdir) {
    auto request = unary_request(in, parse_watch_dir);
    if (!request) return;
    auto opened = directory_watch::open(ioc_, workdir, *request);
    if (auto* refused = std::get_if<envd_error>(&opened))
        return in.respond(connect_error(refused->code, refused->message));
    auto watch = std::get<std::shared_ptr<directory_watch>>(opened);
    auto id = watchers_.add(sandbox_id, [watch] { watch->stop(); });
    if (!id)
        return in.respond(connect_error(connect_code::resource_exhausted,
                                        "the sandbox has " +
                                            std::to_string(watcher_table::max_watchers) +
                                            " watchers already; remove one (RemoveWatcher) first"));
    // Its events wait in the table for GetWatcherEvents; once the directory goes, none come.
    watch->run(
        [this, id = *id](const std::string& name, const std::string& type) {
            watchers_.push(id, {name, type});
        },
        [] {});
    in.respond(json_response(http::status::ok, {{"watcherId", *id}}));
}

void e2b_api::poll_watcher(incoming_request in, const std::string& sandbox_id) {
    auto id = unary_request(in, parse_watcher_id);
    if (!id) return;
    const auto not_found = [&] {
        in.respond(connect_error(connect_code::not_found, "watcher " + *id + " not found"));
    };
    if (in.where.param("method") == "RemoveWatcher")
        return watchers_.remove(sandbox_id, *id)
                   ? in.respond(json_response(http::status::ok, json::object()))
                   : not_found();
    auto polled = watchers_.take(sandbox_id, *id);
    if (!polled) return not_found();
    if (polled->dropped > 0)
        log_.warn("watcher " + *id + " of sandbox " + sandbox_id + " lost " +
                  std::to_string(polled->dropped) + " events: not polled for " +
                  std::to_string(watcher_table::max_events));
    in.respond(json_response(http::status::ok, watcher_events_message(polled->events)));
}

void e2b_api::call_filesystem(incoming_request in, const interpreter::take_stream_fn& take_stream) {
    auto box = sandbox_of(in);
    if (!box) return;
    auto workdir = files_of(in, *box);
    if (!workdir) return;
    const std::string& method = in.where.param("method");
    if (method == "WatchDir") return watch_dir(std::move(in), *workdir, take_stream);
    if (method == "CreateWatcher") return create_watcher(std::move(in), box->id, *workdir);
    if (method == "GetWatcherEvents" || method == "RemoveWatcher")
        return poll_watcher(std::move(in), box->id);
    boost::asio::post(file_pool_, [this, in = std::move(in), workdir = *workdir]() mutable {
        const envd_files files(workdir);
        const filesystem_rpc rpc(files, contexts_.settings().max_listed_files);
        in.respond(
            rpc.call(in.where.param("method"), in.req[http::field::content_type], in.req.body()));
    });
}

void e2b_api::write_file_now(incoming_request in, const std::filesystem::path& workdir) {
    const envd_files files(workdir);
    const auto& req = in.req;
    auto& respond = in.respond;
    auto refuse = [&](const envd_error& e) {
        respond(e2b_error(static_cast<http::status>(e.http_status), e.message));
    };
    const std::string query_path = query_param(in.where.query, "path");
    envd_error error;

    auto uploads = parse_envd_upload(req.body(), req[http::field::content_type],
                                     req[http::field::content_encoding], query_path, error);
    if (!uploads) return refuse(error);
    json written = json::array();
    for (const auto& f : *uploads) {
        if (auto e = files.write(f.path, f.content)) return refuse(*e);
        const auto slash = f.path.rfind('/');
        written.push_back({{"name", slash == std::string::npos ? f.path : f.path.substr(slash + 1)},
                           {"path", envd_path_of(f.path)},
                           {"type", "file"}});
    }
    return respond(json_response(http::status::ok, written));
}

void e2b_api::read_file_now(incoming_request in, const std::filesystem::path& workdir) {
    const envd_files files(workdir);
    auto& respond = in.respond;
    auto& respond_file = in.respond_file;
    auto refuse = [&](const envd_error& e) {
        respond(e2b_error(static_cast<http::status>(e.http_status), e.message));
    };
    const std::string query_path = query_param(in.where.query, "path");
    envd_error error;
    if (query_path.empty())
        return refuse({connect_code::invalid_argument, 400, "the query's 'path' is required"});
    auto path = resolve_envd_path(query_path, error);
    if (!path) return refuse(error);
    // Opened here, with the workdir's path checks; read by the connection as the client takes
    // it, so a client that does not read holds a chunk of the file, not the file.
    unique_fd fd;
    std::uint64_t size = 0;
    if (auto e = files.open_for_read(*path, fd, size, contexts_.settings().max_download_bytes))
        return refuse(*e);
    file_response res{http::status::ok, 11};
    // Raw bytes, as envd sends them: the SDK reads them as text, bytes, a blob or a stream.
    res.set(http::field::content_type, "application/octet-stream");
    res.set(http::field::cache_control, "no-store");
    // The sandbox's code wrote it: it may be an SVG or HTML page with a script (issue 10).
    set_untrusted_file_headers(res, *path);
    res.body().file = std::move(fd);
    res.body().size = size;
    res.prepare_payload();
    respond_file(std::move(res));
}

namespace {

http_response no_such_process(const process_selector& s) {
    return connect_error(connect_code::not_found,
                         s.pid ? "process with pid " + std::to_string(*s.pid) + " not found"
                               : "process with tag " + s.tag->substr(0, 64) + " not found");
}

http_response empty_message() {
    http_response res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = "{}";
    res.prepare_payload();
    return res;
}

// The command's environment: what a login shell in E2B's sandbox sees, then the sandbox's
// envVars, then the command's envs, which win.
std::map<std::string, std::string> command_env(const sandbox_record& box,
                                               const interpreter::env_vars& envs) {
    std::map<std::string, std::string> env = {{"PATH", launcher::sandbox_search_path},
                                              {"HOME", launcher::sandbox_home},
                                              {"USER", "user"},
                                              {"LOGNAME", "user"},
                                              {"SHELL", "/bin/bash"},
                                              {"TMPDIR", "/tmp"},
                                              {"LANG", "C.UTF-8"}};
    for (const auto& [name, value] : box.env) env[name] = value;
    for (const auto& [name, value] : envs) env[name] = value;
    return env;
}

}  // namespace

void e2b_api::call_process(incoming_request in, const interpreter::take_stream_fn& take_stream) {
    auto box = sandbox_of(in);
    if (!box) return;
    const std::string& method = in.where.param("method");
    if (method == "Start") return start_process(std::move(in), *box, take_stream);
    if (method == "Connect") return connect_process(std::move(in), *box, take_stream);
    if (method == "List") return list_processes(std::move(in), *box);
    if (method == "SendInput") return send_input(std::move(in), *box);
    if (method == "SendSignal") return send_signal(std::move(in), *box);
    if (method == "CloseStdin") return close_stdin(std::move(in), *box);
    in.respond(connect_error(
        connect_code::unimplemented,
        "process.Process/" + method.substr(0, 64) + " is not implemented by this gateway"));
}

void e2b_api::start_process(incoming_request in, const sandbox_record& box,
                            const interpreter::take_stream_fn& take_stream) {
    auto& respond = in.respond;
    auto start = streamed_request(
        in.req, respond, [&](std::string_view message, connect_code& code, std::string& error) {
            return parse_process_start(message, settings_.limits.env, code, error);
        });
    if (!start) return;
    auto context = context_of(box, box.default_context);
    const pid_t kernel_pid = context ? context->kernel_pid() : 0;
    if (kernel_pid <= 0)
        return respond(
            stream_refusal(connect_code::unavailable, "the sandbox's kernel is not running"));
    if (processes_.count(box.id) >= settings_.max_processes)
        return respond(stream_refusal(connect_code::resource_exhausted,
                                      "too many commands running in this sandbox"));
    launcher::sandbox_command_request request;
    request.enter_program = settings_.enter_program;
    request.kernel_pid = kernel_pid;
    request.cwd = start->cwd;
    request.argv.push_back(start->cmd);
    request.argv.insert(request.argv.end(), start->args.begin(), start->args.end());
    request.env = command_env(box, start->env);
    request.seccomp_bpf = seccomp_.bpf();
    request.stdin_open = start->stdin_open;
    std::shared_ptr<sandbox_process> process;
    try {
        process = std::make_shared<sandbox_process>(ioc_, launcher::start_sandbox_command(request),
                                                    std::move(*start));
    } catch (const std::exception& e) {
        log_.warn(std::string("a command could not be started: ") + e.what());
        return respond(stream_refusal(connect_code::internal, "the command could not be started"));
    }
    auto out = take_stream();
    auto stream = std::make_shared<process_stream>(ioc_, out, settings_.keepalive_every);
    std::weak_ptr<sandbox_process> weak = process;
    process->run(
        [this, out, stream, weak, sandbox_id = box.id](
            std::optional<std::uint32_t> pid, std::string why) -> sandbox_process::listener {
            if (!pid) {
                out->respond(stream_refusal(connect_code::failed_precondition, why));
                return nullptr;
            }
            if (auto p = weak.lock()) processes_.add(sandbox_id, p);
            return stream->open(*pid);
        },
        [this, weak, sandbox_id = box.id] {
            if (auto p = weak.lock()) processes_.remove(sandbox_id, p->pid());
        });
}

void e2b_api::connect_process(incoming_request in, const sandbox_record& box,
                              const interpreter::take_stream_fn& take_stream) {
    auto& respond = in.respond;
    auto selector = streamed_request(in.req, respond, parse_selector_request);
    if (!selector) return;
    auto process = processes_.find(box.id, *selector);
    if (!process) {
        const auto res = no_such_process(*selector);
        return respond(
            stream_refusal(connect_code::not_found, json::parse(res.body()).value("message", "")));
    }
    auto out = take_stream();
    auto stream = std::make_shared<process_stream>(ioc_, out, settings_.keepalive_every);
    // The listener is made on the process's strand, so no event falls between.
    auto listener = std::make_shared<sandbox_process::listener>();
    process->attach(
        [listener](const process_event& e) {
            if (*listener) (*listener)(e);
        },
        [out, stream, listener, pid = process->pid(), selector = *selector](bool attached) {
            if (!attached)
                return out->respond(
                    stream_refusal(connect_code::not_found, "the process has ended"));
            *listener = stream->open(pid);
        });
}

void e2b_api::list_processes(incoming_request in, const sandbox_record& box) {
    json processes = json::array();
    for (const auto& p : processes_.list(box.id)) {
        const auto& c = p->config();
        json envs = json::object();
        for (const auto& [name, value] : c.env) envs[name] = value;
        json config = {{"cmd", c.cmd}, {"args", c.args}, {"envs", envs}};
        if (!c.cwd_asked.empty()) config["cwd"] = c.cwd_asked;
        json info = {{"config", config}, {"pid", p->pid()}};
        if (c.tag) info["tag"] = *c.tag;
        processes.push_back(std::move(info));
    }
    in.respond(json_response(http::status::ok, {{"processes", processes}}));
}

void e2b_api::send_input(incoming_request in, const sandbox_record& box) {
    auto request = unary_request(in, parse_send_input);
    if (!request) return;
    auto process = processes_.find(box.id, request->process);
    if (!process) return in.respond(no_such_process(request->process));
    connect_code code = connect_code::invalid_argument;
    std::string error;
    if (!process->write_stdin(request->bytes, code, error))
        return in.respond(connect_error(code, error));
    in.respond(empty_message());
}

void e2b_api::send_signal(incoming_request in, const sandbox_record& box) {
    auto request = unary_request(in, parse_send_signal);
    if (!request) return;
    auto process = processes_.find(box.id, request->process);
    if (!process || !process->signal(request->signal))
        return in.respond(no_such_process(request->process));
    in.respond(empty_message());
}

void e2b_api::close_stdin(incoming_request in, const sandbox_record& box) {
    auto selector = unary_request(in, parse_selector_request);
    if (!selector) return;
    auto process = processes_.find(box.id, *selector);
    if (!process) return in.respond(no_such_process(*selector));
    process->close_stdin();
    in.respond(empty_message());
}

void e2b_api::kill_processes(const std::string& sandbox_id) {
    for (const auto& p : processes_.take(sandbox_id)) p->signal(SIGKILL);
}

void e2b_api::create_context(incoming_request in) {
    auto box = sandbox_of(in);
    if (!box) return;
    std::string error;
    auto request = parse_create_context(in.req.body(), error);
    if (!request) return in.respond(e2b_error(http::status::bad_request, error));
    interpreter::context_request cr;
    cr.via_e2b = true;
    cr.language = request->language.value_or(languages::execution_language::python);
    // The sandbox's network, for each of its contexts: checked on create, within the
    // ceilings then; a users file reloaded since may have narrowed the owner's.
    cr.network_allow = box->network_allow;
    if (!cr.network_allow.empty())
        if (auto why = interpreter::network_refusal(
                cr.network_allow, contexts_.settings().egress_allow, box->owner.egress_allow))
            return in.respond(e2b_error(http::status::forbidden, *why));
    if (auto why = contexts_.choose_kernel(cr))
        return in.respond(e2b_error(http::status::bad_request, *why));
    // One file tree: the new context's kernel works in the default context's sandbox.
    auto workdir = files_of(in, *box);
    if (!workdir) return;
    cr.share_files_with = box->default_context;
    auto cwd = start_directory(request->cwd, *workdir);
    if (auto* why = std::get_if<envd_error>(&cwd))
        return in.respond(e2b_error(http::status::bad_request, "'cwd': " + why->message));
    cr.start_dir = std::get<std::string>(cwd);
    cr.home = launcher::sandbox_home;
    const std::string language(languages::to_string(*cr.language));
    contexts_.create(cr, box->owner,
                     [this, id = box->id, language, cwd = cr.start_dir,
                      respond = std::move(in.respond)](interpreter::create_context_result r) {
                         if (!r.context) return respond(start_refused(r.error, r.message));
                         sandbox_context c{r.context->id(), language, cwd};
                         if (!sandboxes_.add_context(id, c)) {
                             // Killed meanwhile: the context goes with it.
                             contexts_.remove(r.context, [] {});
                             return respond(no_such_sandbox(id));
                         }
                         respond(json_response(http::status::ok, context_json(c)));
                     });
}

void e2b_api::execute(incoming_request in, const interpreter::take_stream_fn& take_stream) {
    auto found = sandbox_of(in);
    if (!found) return;
    const sandbox_record& box = *found;
    std::string error;
    auto request = parse_execute(in.req.body(), settings_.limits, error);
    if (!request) return in.respond(e2b_error(http::status::bad_request, error));
    const std::string context_id =
        request->context_id.empty() ? box.default_context : request->context_id;
    auto context = context_of(box, context_id);
    if (!context) return in.respond(no_such_context(context_id));
    interpreter::execution_request exec;
    exec.code = std::move(request->code);
    // Python is the default context's own language: no runner.
    if (request->language && *request->language != languages::execution_language::python)
        exec.language = request->language;
    exec.api = "e2b";
    exec.keep_result_descriptions = true;  // the results' data and chart
    exec.stream = true;
    exec.timeout = contexts_.settings().request_limits.default_timeout;
    if (exec.timeout->count() == 0) exec.timeout.reset();
    // The sandbox's envVars, then the call's, which win.
    exec.env = box.env;
    for (auto& [name, value] : request->env) {
        std::erase_if(exec.env, [&](const auto& kv) { return kv.first == name; });
        exec.env.emplace_back(name, value);
    }
    std::sort(exec.env.begin(), exec.env.end());
    if (auto why = context->refusal(exec))
        return in.respond(e2b_error(http::status::bad_request, *why));
    auto out = take_stream();
    auto stream = std::make_shared<execution_stream>(ioc_, out, settings_.keepalive_every);
    context->submit(std::move(exec), [out, stream,
                                      context](interpreter::interpreter_context::submit_result r) {
        if (r.outcome != interpreter::interpreter_context::submit_outcome::accepted || !r.exec) {
            const bool full =
                r.outcome == interpreter::interpreter_context::submit_outcome::queue_full;
            return out->respond(e2b_error(
                full ? http::status::too_many_requests : http::status::conflict,
                r.why.empty() ? (full ? "too many executions waiting" : "the context is closed")
                              : r.why));
        }
        stream->follow(r.exec, [context, id = r.exec->id()] {
            context->interrupt(id, [](std::shared_ptr<interpreter::execution>) {});
        });
    });
}

}  // namespace callisto::gateway::e2b
