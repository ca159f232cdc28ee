#include "load_run.hpp"

#include <unistd.h>
#include <algorithm>
#include <iostream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace callisto::load {

namespace http = beast::http;
using asio::use_awaitable;
using clock = std::chrono::steady_clock;

std::chrono::microseconds think_pause(std::chrono::milliseconds mean, std::mt19937& random) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(mean).count();
    std::uniform_int_distribution<std::int64_t> spread(us / 2, us * 3 / 2);
    return std::chrono::microseconds(spread(random));
}

std::chrono::microseconds ramp_up_delay(std::chrono::seconds ramp_up, int index, int clients) {
    if (clients <= 0) return std::chrono::microseconds(0);
    return std::chrono::duration_cast<std::chrono::microseconds>(ramp_up) * index / clients;
}

load_run::load_run(load_options options) : options_(std::move(options)), mix_(options_.mix) {}

double load_run::elapsed_seconds() const {
    return std::chrono::duration<double>(finished_ - started_).count();
}

std::string load_run::run() {
    if (options_.tls) {
        try {
            tls_ = make_tls_context(options_);
        } catch (const std::exception& e) {
            return e.what();
        }
    }
    asio::co_spawn(ioc_, main_task(), asio::detached);
    ioc_.run();
    return setup_error_;
}

asio::awaitable<void> load_run::sleep_for(clock::duration d) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    timer.expires_after(d);
    co_await timer.async_wait(use_awaitable);
}

asio::awaitable<void> load_run::main_task() {
    setup_error_ = co_await make_targets();
    if (!setup_error_.empty()) {
        co_await remove_targets();
        co_return;
    }
    started_ = clock::now();
    ends_ = started_ + options_.duration;
    ramp_up_ends_ = started_ + options_.ramp_up;
    auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, sampler(), asio::detached);
    for (int i = 0; i < options_.clients; ++i) asio::co_spawn(executor, client(i), asio::detached);
    // Clients finish their last execution after the end; wait for them (bounded).
    co_await sleep_for(options_.duration);
    const auto give_up = clock::now() + options_.execution_timeout + std::chrono::seconds(5);
    while (stats_.clients_running > 0 && clock::now() < give_up)
        co_await sleep_for(std::chrono::milliseconds(50));
    finished_ = clock::now();
    stopping_ = true;
    if (!options_.keep_kernels) co_await remove_targets();
    ioc_.stop();  // clients that never finished (unanswered past the bound) are abandoned
}

asio::awaitable<std::string> load_run::make_targets() {
    http_connection http(co_await asio::this_coro::executor, options_, tls_);
    for (int i = 0; i < options_.kernels; ++i) {
        const bool v1 = options_.api == api_kind::v1;
        const nlohmann::json body = v1 ? nlohmann::json{{"kernel", options_.kernel}}
                                       : nlohmann::json{{"name", options_.kernel}};
        http_answer answer;
        // A gateway past its capacity refuses new kernels with Retry-After: come back then, as
        // a client should, for up to ten minutes.
        const auto give_up = clock::now() + std::chrono::minutes(10);
        for (;;) {
            try {
                answer =
                    co_await http.request(http::verb::post, v1 ? "/v1/contexts" : "/api/kernels",
                                          body.dump(), std::chrono::seconds(120));
            } catch (const boost::system::system_error& e) {
                co_return std::string("cannot reach the gateway: ") + e.what() + tls_hint(e.code());
            } catch (const std::exception& e) {
                co_return std::string("cannot reach the gateway: ") + e.what();
            }
            const bool later = (answer.status == 503 || answer.status == 429) &&
                               answer.retry_after > 0 && clock::now() < give_up;
            if (!later) break;
            ++stats_.setup_refusals;
            co_await sleep_for(std::chrono::seconds(answer.retry_after));
        }
        if (answer.status != 201)
            co_return "creating " + std::string(v1 ? "context" : "kernel") + " " +
                std::to_string(i + 1) + " of " + std::to_string(options_.kernels) +
                " was answered " + std::to_string(answer.status) + ": " + answer.body;
        targets_.push_back(nlohmann::json::parse(answer.body, nullptr, false).value("id", ""));
    }
    co_return std::string();
}

asio::awaitable<void> load_run::remove_targets() {
    http_connection http(co_await asio::this_coro::executor, options_, tls_);
    const std::string prefix = options_.api == api_kind::v1 ? "/v1/contexts/" : "/api/kernels/";
    for (const auto& id : targets_) {
        try {
            co_await http.request(http::verb::delete_, prefix + id, {}, std::chrono::seconds(60));
        } catch (const std::exception&) {
        }
    }
    targets_.clear();
}

asio::awaitable<void> load_run::client(int index) {
    if (options_.ramp_up.count() > 0)
        co_await sleep_for(ramp_up_delay(options_.ramp_up, index, options_.clients));
    ++stats_.clients_running;
    auto executor = co_await asio::this_coro::executor;
    std::mt19937 random(static_cast<unsigned>(index) * 7919u + 17u);
    const std::string target = targets_[static_cast<std::size_t>(index) % targets_.size()];
    kernel_socket socket(executor, options_, tls_);
    http_connection http(executor, options_, tls_);
    const std::string session = new_id();
    while (clock::now() < ends_) {
        const snippet& s = snippet_of(mix_.draw(random));
        if (s.kind == snippet_kind::oneshot) {
            co_await http_execution(http, "/v1/executions", s);
        } else if (options_.api == api_kind::v1) {
            co_await http_execution(http, "/v1/contexts/" + target + "/executions", s);
        } else {
            if (const auto why = socket.failure(); !why.empty()) {
                // Dropped while this client thought: reopened below, nothing pending.
                ++stats_.connection_errors;
                stats_.problem("WebSocket dropped between executions: " + why);
                socket.close();
            }
            if (!socket.is_open()) {
                bool failed = false;
                try {
                    co_await socket.open(target, session);
                } catch (const std::exception& e) {
                    ++stats_.connection_errors;
                    stats_.problem(std::string("WebSocket connect: ") + e.what());
                    failed = true;
                }
                if (failed) {  // (no co_await inside a handler)
                    co_await sleep_for(std::chrono::seconds(1));
                    continue;
                }
            }
            co_await jupyter_execution(socket, target, session, s);
        }
        if (options_.think.count() > 0) co_await sleep_for(think_pause(options_.think, random));
    }
    --stats_.clients_running;
}

asio::awaitable<void> load_run::jupyter_execution(kernel_socket& socket,
                                                  const std::string& kernel_id,
                                                  const std::string& session, const snippet& s) {
    auto message = make_message("execute_request",
                                {{"code", s.code},
                                 {"silent", false},
                                 {"store_history", true},
                                 {"user_expressions", nlohmann::json::object()},
                                 {"allow_stdin", false},
                                 // Clients share kernels: one's error must not abort the
                                 // others' queued requests.
                                 {"stop_on_error", false}},
                                session, "shell");
    const std::string id = message["header"]["msg_id"];
    socket.expect(id);
    const auto t0 = clock::now();
    const auto deadline = t0 + options_.execution_timeout;
    ++stats_.sent;
    auto lost = [&](const std::string& why) {
        ++stats_.lost;
        stats_.problem(std::string(s.name) + ": " + why);
    };
    // A failed write most likely never reached the kernel (the connection was already gone):
    // the request is sent again, once, on the next connection. Should it have arrived after
    // all, the kernel runs it twice under the same msg_id; the first reply and idle decide,
    // and the second run's output is dropped as another request's by the next expect().
    bool unsent = false;
    try {
        co_await socket.send(message);
    } catch (const std::exception& e) {
        ++stats_.connection_errors;
        stats_.problem(std::string("WebSocket send: ") + e.what());
        if (!options_.resume) {
            ++stats_.lost;
            co_return;
        }
        unsent = true;
    }
    outcome o;
    bool reply = false, idle = false, interrupted = false;
    int reconnections = 0;
    auto backoff = std::chrono::milliseconds(500);
    // After a reconnection, the reply (sent to the connection that dropped) or the idle (in a
    // part of the replay the gateway no longer held) may never come: once one of the two is
    // here, the other is awaited this long, then the execution is judged by what came.
    constexpr auto grace = std::chrono::seconds(2);
    std::optional<clock::time_point> grace_ends;
    auto start_grace = [&] {
        if (reconnections > 0 && (reply || idle) && !grace_ends) grace_ends = clock::now() + grace;
    };
    while (!(reply && idle)) {
        if (!socket.is_open()) {
            // As JupyterLab does: the same session, asking for the iopub output missed.
            if (clock::now() >= deadline) {
                lost("its WebSocket could not be reopened within " +
                     std::to_string(options_.execution_timeout.count()) + " s");
                co_return;
            }
            co_await sleep_for(std::min<clock::duration>(backoff, deadline - clock::now()));
            backoff = std::min(backoff * 2, std::chrono::milliseconds(4000));
            if (clock::now() >= deadline) continue;
            bool opened = false, gone = false;
            try {
                co_await socket.open(
                    kernel_id, session, true,
                    std::min<clock::duration>(std::chrono::seconds(30), deadline - clock::now()));
                opened = true;
            } catch (const handshake_refused& e) {
                ++stats_.connection_errors;
                stats_.problem(std::string("WebSocket reconnect: ") + e.what());
                gone = e.status == 404 || e.status == 403;  // its answer will not come
            } catch (const std::exception& e) {
                ++stats_.connection_errors;
                stats_.problem(std::string("WebSocket reconnect: ") + e.what());
            }
            if (gone) {
                lost("its kernel can no longer be reached, the reply will not come");
                co_return;
            }
            if (!opened) continue;
            ++stats_.reconnects;
            ++reconnections;
            backoff = std::chrono::milliseconds(500);
            if (unsent) {
                try {
                    co_await socket.send(message);
                    unsent = false;
                } catch (const std::exception& e) {
                    ++stats_.connection_errors;
                    stats_.problem(std::string("WebSocket send: ") + e.what());
                }
                if (unsent) continue;
            }
            start_grace();
            continue;
        }
        const auto until = grace_ends ? std::min(*grace_ends, deadline) : deadline;
        std::optional<nlohmann::json> m;
        std::string dropped;
        try {
            m = co_await socket.receive(until, until == deadline);
        } catch (const std::exception& e) {
            dropped = e.what();
        }
        if (!dropped.empty()) {
            ++stats_.connection_errors;
            stats_.problem("WebSocket dropped mid-execution: " + dropped);
            if (!options_.resume) {
                ++stats_.lost;
                co_return;
            }
            continue;  // reopened at the top of the loop
        }
        if (!m) {
            if (until == deadline) {
                lost("no reply and idle within " +
                     std::to_string(options_.execution_timeout.count()) + " s" +
                     (reconnections > 0
                          ? " (after " + std::to_string(reconnections) + " reconnections)"
                          : ""));
                co_return;
            }
            break;  // the grace is over: judged by what came
        }
        if (const auto gap = replay_gap(*m)) {
            o.output_gap = true;
            stats_.problem(std::string(s.name) + ": the gateway's replay buffer no longer held " +
                           std::to_string(gap->first) + "-" + std::to_string(gap->second) +
                           "; its output is not checked");
            continue;
        }
        const std::string type = (*m)["header"].value("msg_type", "");
        const auto& content = (*m)["content"];
        if (type == "status") {
            const std::string state = content.value("execution_state", "");
            if (state == "idle") idle = true;
            if (state == "busy" && s.kind == snippet_kind::interrupt && !interrupted) {
                interrupted = true;
                asio::co_spawn(co_await asio::this_coro::executor, interrupt_soon(kernel_id),
                               asio::detached);
            }
        } else if (type == "stream" && content.value("name", "") == "stdout") {
            o.stdout_text += content.value("text", "");
        } else if (type == "execute_result") {
            o.text_result = content["data"].value("text/plain", "");
        } else if (type == "display_data") {
            o.image = o.image || content["data"].contains("image/png");
        } else if (type == "error") {
            o.error_name = content.value("ename", "");
        } else if (type == "execute_reply") {
            reply = true;
            o.status = content.value("status", "");
            if (o.status == "error") o.error_name = content.value("ename", o.error_name);
        }
        start_grace();
    }
    if (!reply) {
        // Its status as the iopub stream tells it: an error message, or none.
        o.status = o.error_name.empty() ? "ok" : "error";
        ++stats_.resumed_without_reply;
    }
    if (reconnections > 0) ++stats_.resumed;
    std::string why;
    const bool ok = expected(s, o, false, why);
    stats_.answered(s.name,
                    std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0), ok,
                    why, t0 < ramp_up_ends_);
}

asio::awaitable<void> load_run::interrupt_soon(std::string kernel_id) {
    co_await sleep_for(std::chrono::milliseconds(200));
    http_connection http(co_await asio::this_coro::executor, options_, tls_);
    try {
        co_await http.request(http::verb::post, "/api/kernels/" + kernel_id + "/interrupt", {},
                              std::chrono::seconds(30));
    } catch (const std::exception& e) {
        ++stats_.connection_errors;
        stats_.problem(std::string("interrupt: ") + e.what());
    }
}

load_run::outcome load_run::outcome_of_execution_json(const nlohmann::json& e) {
    outcome o;
    o.status = e.value("status", "");
    o.stdout_text = e.value("stdout", "");
    if (e.contains("results") && e["results"].is_array())
        for (const auto& r : e["results"]) {
            if (!r.contains("data") || !r["data"].is_object()) continue;
            if (r["data"].contains("text/plain") && r["data"]["text/plain"].is_string())
                o.text_result = r["data"]["text/plain"];
            o.image = o.image || r["data"].contains("image/png");
        }
    if (e.contains("error") && e["error"].is_object()) o.error_name = e["error"].value("name", "");
    return o;
}

asio::awaitable<void> load_run::http_execution(http_connection& http, std::string target,
                                               const snippet& s) {
    nlohmann::json body = {{"code", s.code}};
    if (s.kind == snippet_kind::oneshot) body["policy"] = "fresh";
    if (s.kind == snippet_kind::interrupt) body["timeout"] = 0.3;
    const auto t0 = clock::now();
    ++stats_.sent;
    http_answer answer;
    try {
        answer = co_await http.request(http::verb::post, std::move(target), body.dump(),
                                       options_.execution_timeout);
    } catch (const std::exception& e) {
        ++stats_.lost;
        ++stats_.connection_errors;
        stats_.problem(std::string(s.name) + ": " + e.what());
        co_return;
    }
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0);
    if (answer.status == 429 || answer.status == 503) {
        ++stats_.refused;
        co_return;
    }
    if (answer.status != 200) {
        stats_.answered(s.name, took, false,
                        "HTTP " + std::to_string(answer.status) + ": " + answer.body.substr(0, 200),
                        t0 < ramp_up_ends_);
        co_return;
    }
    const auto parsed = nlohmann::json::parse(answer.body, nullptr, false);
    std::string why;
    const bool ok = parsed.is_object() && expected(s, outcome_of_execution_json(parsed), true, why);
    stats_.answered(s.name, took, ok, parsed.is_object() ? why : "not JSON", t0 < ramp_up_ends_);
}

bool load_run::expected(const snippet& s, const outcome& o, bool over_v1, std::string& why) const {
    auto fail = [&](const std::string& what) {
        why =
            what + " (status " + o.status + (o.error_name.empty() ? "" : ", " + o.error_name) + ")";
        if (o.output_gap) why += " (part of its output was dropped from the replay buffer)";
        return false;
    };
    if (s.kind == snippet_kind::interrupt) {
        if (over_v1 && o.status != "timeout") return fail("expected the deadline to stop it");
        if (!over_v1 && o.error_name != "KeyboardInterrupt")
            return fail("expected KeyboardInterrupt");
        return true;
    }
    if (!s.expect_error.empty())
        return o.error_name == s.expect_error ? true : fail("expected " + s.expect_error);
    if (o.status != "ok") return fail("expected ok");
    if (o.output_gap) return true;  // the gateway said some output was dropped: not checked
    if (!s.expect_text.empty() && o.stdout_text.find(s.expect_text) == std::string::npos &&
        o.text_result != s.expect_text)
        return fail("expected '" + s.expect_text + "' in its output");
    if (s.expect_image && !o.image) return fail("expected an image/png");
    return true;
}

asio::awaitable<void> load_run::sampler() {
    http_connection http(co_await asio::this_coro::executor, options_, tls_);
    const bool tty = ::isatty(STDERR_FILENO);
    while (!stopping_) {
        server_sample sample;
        sample.at_seconds = std::chrono::duration<double>(clock::now() - started_).count();
        sample.executions = stats_.answered_count();
        try {
            const auto metrics =
                co_await http.request(http::verb::get, "/metrics", {}, std::chrono::seconds(10));
            if (metrics.status == 200) {
                sample.rss_bytes = prometheus_value(metrics.body, "process_resident_memory_bytes");
                sample.open_fds = prometheus_value(metrics.body, "process_open_fds");
            }
        } catch (const std::exception&) {
        }
        stats_.timeline.push_back(sample);
        if (options_.progress)
            std::cerr << (tty ? "\r" : "") << progress_line(stats_, sample.at_seconds)
                      << (tty ? "\033[K" : "\n") << std::flush;
        co_await sleep_for(std::chrono::seconds(1));
    }
    if (options_.progress && tty) std::cerr << "\n";
}

}  // namespace callisto::load
