#pragma once
// One submitted piece of code and everything it produced: a resource that outlives the
// request that created it. The owning context mutates it on its strand; HTTP handlers read it
// from any thread, so the state sits behind a mutex.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/interpreter/execution_request.hpp"
#include "gateway/interpreter/output_budget.hpp"

namespace callisto::gateway::interpreter {

enum class execution_status { queued, running, ok, error, timeout, interrupted };
std::string_view to_string(execution_status s);

class execution {
public:
    // One event: {"type": "stdout"|"stderr"|"result"|"error"|"end", ...}. `last` on "end".
    // Called under the execution's lock, in order: sinks only queue the event.
    using event_sink = std::function<void(const nlohmann::json& event, bool last)>;
    using steady = std::chrono::steady_clock;

    execution(std::string id, std::string context_id, execution_request request,
              std::size_t text_budget_bytes);

    const std::string& id() const { return id_; }
    const execution_request& request() const { return request_; }
    // What it keeps of each stream (the request's output_budget within --output-budget): so
    // much too of its error's value and of its traceback.
    std::size_t text_budget_bytes() const { return stdout_.max_bytes(); }
    std::chrono::system_clock::time_point created_at() const { return created_at_; }

    // Mutators, from the context's strand.
    void mark_started();
    void add_stream(std::string_view name, std::string_view text);
    // `main`: the code's value (execute_result), not a display (display_data); its event
    // says so, for clients that tell them apart (E2B's is_main_result).
    void add_result(nlohmann::json bundle, nlohmann::json metadata, bool main = false);
    void set_error(std::string name, std::string value, std::vector<std::string> traceback);
    void set_execution_count(long long n);
    void note_truncated_result(std::string mime, std::size_t bytes, std::string where);
    // A field the caps cut ("error.value", "results[2].metadata"): `bytes` were left out.
    void note_truncated_field(std::string field, std::size_t bytes);
    // Once; later calls are ignored. state_preserved only for timeouts and interrupts.
    void finish(execution_status status, std::optional<bool> state_preserved = std::nullopt);

    execution_status status() const;
    bool finished() const;
    nlohmann::json to_json() const;
    nlohmann::json summary() const;  // without outputs, for listings

    // What a context record keeps of it (--state-dir): to_json() with stdout, stderr and the
    // error's value and traceback cut to their last few KiB, and results to their short
    // text/plain, a few KiB in all: the record is rewritten at every execution.
    nlohmann::json to_record() const;
    // An execution an earlier gateway recorded, answered as recorded (with "restored": true)
    // from now on. One that was queued or running then ended with the restart: it becomes an
    // error "GatewayRestarted" saying so. Throws std::invalid_argument on a malformed record.
    static std::shared_ptr<execution> restored(nlohmann::json saved, const std::string& context_id);

    // Receives every later event; when already finished, just the "end" event. With
    // `from_start`, first what happened so far as remembered: "start" (once started), then the
    // kept stdout and stderr (head, marker, tail), each result and the error, in that order.
    void subscribe(event_sink sink, bool from_start = false);

private:
    nlohmann::json to_json_locked() const;
    void replay_locked(const event_sink& sink) const;
    void emit(const nlohmann::json& event, bool last = false);

    const std::string id_;
    const std::string context_id_;
    const execution_request request_;
    const std::chrono::system_clock::time_point created_at_;
    const steady::time_point submitted_;

    mutable std::mutex mutex_;
    execution_status status_ = execution_status::queued;
    std::optional<steady::time_point> started_;
    std::optional<steady::time_point> ended_;
    output_budget stdout_;
    output_budget stderr_;
    bool stdout_notice_sent_ = false;
    bool stderr_notice_sent_ = false;
    nlohmann::json results_ = nlohmann::json::array();
    nlohmann::json error_;  // null when none
    nlohmann::json truncated_results_ = nlohmann::json::array();
    nlohmann::json truncated_fields_ = nlohmann::json::array();
    std::optional<long long> execution_count_;
    std::optional<bool> state_preserved_;
    std::vector<event_sink> sinks_;
    std::optional<nlohmann::json> restored_;  // set: answered as this, unchanging
};

}  // namespace callisto::gateway::interpreter
