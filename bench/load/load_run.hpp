#pragma once
// One load run: makes the kernels (or /v1 contexts) the clients share, runs every client as a
// coroutine on one thread until the duration is over, samples the server each second, and
// removes what it made.

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <utility>  // before Boost 1.74's awaitable.hpp, which uses std::exchange unincluded
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include "gateway_connection.hpp"
#include "load_options.hpp"
#include "load_stats.hpp"
#include "scenario.hpp"

namespace callisto::load {

// A client's pause before its next execution: drawn at random between half and one and a half
// times `mean`. Fixed pauses line clients up: those answered in one burst all wake together a
// pause later, and the bursts feed themselves (1,000 clients over 100 kernels, 20 s pauses, one
// process: p50 107 to 174 ms in five runs with fixed pauses, 15.7 ms with drawn ones).
std::chrono::microseconds think_pause(std::chrono::milliseconds mean, std::mt19937& random);

// When client `index` of `clients` starts: evenly over `ramp_up`. Counted in microseconds, not
// in the option's whole seconds, where `ramp_up * index / clients` rounded down started the
// clients in bursts, one a second (60 clients over 3 s: 20 at once, each second).
std::chrono::microseconds ramp_up_delay(std::chrono::seconds ramp_up, int index, int clients);

class load_run {
public:
    explicit load_run(load_options options);

    // Runs to the end; the stats then hold the outcome. "" or why the run could not start.
    [[nodiscard]] std::string run();
    const load_stats& stats() const { return stats_; }
    double elapsed_seconds() const;
    const load_options& options() const { return options_; }

private:
    struct outcome {
        std::string status;  // "ok", "error", "timeout", "aborted"
        std::string stdout_text;
        std::string text_result;
        std::string error_name;
        bool image = false;
        // The gateway said part of the output replayed after a reconnection was dropped from
        // its buffer: what the output should contain is not checked, only the status.
        bool output_gap = false;
    };

    asio::awaitable<void> main_task();
    asio::awaitable<std::string> make_targets();
    asio::awaitable<void> remove_targets();
    asio::awaitable<void> client(int index);
    asio::awaitable<void> jupyter_execution(kernel_socket& socket, const std::string& kernel_id,
                                            const std::string& session, const snippet& s);
    asio::awaitable<void> http_execution(http_connection& http, std::string target,
                                         const snippet& s);
    asio::awaitable<void> interrupt_soon(std::string kernel_id);
    asio::awaitable<void> sampler();
    asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d);
    bool expected(const snippet& s, const outcome& o, bool over_v1, std::string& why) const;
    static outcome outcome_of_execution_json(const nlohmann::json& execution);

    load_options options_;
    std::shared_ptr<asio::ssl::context> tls_;  // https:// only
    load_stats stats_;
    snippet_mix mix_;
    asio::io_context ioc_;
    std::vector<std::string> targets_;  // kernel ids or context ids
    std::chrono::steady_clock::time_point started_;
    std::chrono::steady_clock::time_point ends_;
    std::chrono::steady_clock::time_point ramp_up_ends_;  // when the last client has started
    std::chrono::steady_clock::time_point finished_;
    bool stopping_ = false;
    std::string setup_error_;
};

}  // namespace callisto::load
