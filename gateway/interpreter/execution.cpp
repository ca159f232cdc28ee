#include "gateway/interpreter/execution.hpp"

#include "kernelproto/iso_time.hpp"

namespace callisto::gateway::interpreter {

namespace {
long long ms_between(execution::steady::time_point a, execution::steady::time_point b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}
}  // namespace

std::string_view to_string(execution_status s) {
    switch (s) {
        case execution_status::queued: return "queued";
        case execution_status::running: return "running";
        case execution_status::ok: return "ok";
        case execution_status::error: return "error";
        case execution_status::timeout: return "timeout";
        case execution_status::interrupted: return "interrupted";
    }
    return "unknown";
}

execution::execution(std::string id, std::string context_id, execution_request request,
                     std::size_t text_budget_bytes)
    : id_(std::move(id)),
      context_id_(std::move(context_id)),
      request_(std::move(request)),
      created_at_(std::chrono::system_clock::now()),
      submitted_(steady::now()),
      stdout_(text_budget_bytes),
      stderr_(text_budget_bytes) {}

void execution::mark_started() {
    std::lock_guard lock(mutex_);
    if (status_ != execution_status::queued) return;
    status_ = execution_status::running;
    started_ = steady::now();
    emit({{"type", "start"}, {"id", id_}, {"queue_ms", ms_between(submitted_, *started_)}});
}

void execution::add_stream(std::string_view name, std::string_view text) {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    const bool is_err = name == "stderr";
    auto& budget = is_err ? stderr_ : stdout_;
    auto shown = budget.append(text);
    if (!shown.empty()) {
        emit({{"type", is_err ? "stderr" : "stdout"}, {"text", std::string(shown)}});
    } else if (budget.head_full()) {
        // The live stream shows the head only; the end event carries head, marker and tail.
        bool& sent = is_err ? stderr_notice_sent_ : stdout_notice_sent_;
        if (!sent) {
            sent = true;
            emit({{"type", is_err ? "stderr" : "stdout"},
                  {"text",
                   "\n[... output beyond the budget is cut; the end event has the tail ...]\n"},
                  {"truncated", true}});
        }
    }
}

void execution::add_result(nlohmann::json bundle, nlohmann::json metadata) {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    nlohmann::json r = {{"data", std::move(bundle)}, {"metadata", std::move(metadata)}};
    emit({{"type", "result"}, {"data", r["data"]}, {"metadata", r["metadata"]}});
    results_.push_back(std::move(r));
}

void execution::set_error(std::string name, std::string value, std::vector<std::string> traceback) {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    error_ = {{"name", std::move(name)}, {"value", std::move(value)}, {"traceback", traceback}};
    emit({{"type", "error"},
          {"name", error_["name"]},
          {"value", error_["value"]},
          {"traceback", error_["traceback"]}});
}

void execution::set_execution_count(long long n) {
    std::lock_guard lock(mutex_);
    execution_count_ = n;
}

void execution::note_truncated_result(std::string mime, std::size_t bytes, std::string where) {
    std::lock_guard lock(mutex_);
    truncated_results_.push_back(
        {{"mime", std::move(mime)}, {"bytes", bytes}, {"moved_to", std::move(where)}});
}

void execution::finish(execution_status status, std::optional<bool> state_preserved) {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    ended_ = steady::now();
    if (!started_) started_ = ended_;
    status_ = status;
    state_preserved_ = state_preserved;
    emit({{"type", "end"}, {"execution", to_json_locked()}}, true);
    sinks_.clear();
}

execution_status execution::status() const {
    std::lock_guard lock(mutex_);
    return status_;
}

bool execution::finished() const {
    std::lock_guard lock(mutex_);
    return ended_.has_value();
}

nlohmann::json execution::to_json() const {
    std::lock_guard lock(mutex_);
    return to_json_locked();
}

nlohmann::json execution::to_json_locked() const {
    const auto now = steady::now();
    nlohmann::json j = {
        {"id", id_},
        {"context_id", context_id_},
        {"status", to_string(status_)},
        {"created_at", kernelproto::format_iso_time(created_at_)},
        {"stdout", stdout_.str()},
        {"stderr", stderr_.str()},
        {"results", results_},
        {"error", error_},
        {"execution_count",
         execution_count_ ? nlohmann::json(*execution_count_) : nlohmann::json()},
        {"queue_ms", ms_between(submitted_, started_.value_or(now))},
        {"duration_ms", started_ ? ms_between(*started_, ended_.value_or(now)) : 0},
        {"truncated",
         {{"stdout_bytes", stdout_.truncated_bytes()},
          {"stderr_bytes", stderr_.truncated_bytes()},
          {"results", truncated_results_}}},
    };
    if (!request_.idempotency_key.empty()) j["idempotency_key"] = request_.idempotency_key;
    if (request_.language) j["language"] = languages::to_string(*request_.language);
    if (state_preserved_) j["state_preserved"] = *state_preserved_;
    return j;
}

nlohmann::json execution::summary() const {
    std::lock_guard lock(mutex_);
    nlohmann::json j = {{"id", id_},
                        {"status", to_string(status_)},
                        {"created_at", kernelproto::format_iso_time(created_at_)}};
    if (request_.language) j["language"] = languages::to_string(*request_.language);
    return j;
}

void execution::subscribe(event_sink sink, bool from_start) {
    std::lock_guard lock(mutex_);
    if (from_start) replay_locked(sink);
    if (ended_) {
        sink({{"type", "end"}, {"execution", to_json_locked()}}, true);
        return;
    }
    sinks_.push_back(std::move(sink));
}

void execution::replay_locked(const event_sink& sink) const {
    if (!started_) return;
    sink({{"type", "start"}, {"id", id_}, {"queue_ms", ms_between(submitted_, *started_)}}, false);
    for (const auto* name : {"stdout", "stderr"}) {
        const auto& budget = std::string_view(name) == "stdout" ? stdout_ : stderr_;
        if (budget.total_bytes() == 0) continue;
        nlohmann::json ev = {{"type", name}, {"text", budget.str()}, {"replayed", true}};
        if (budget.truncated_bytes() > 0) ev["truncated"] = true;
        sink(ev, false);
    }
    for (const auto& r : results_)
        sink({{"type", "result"}, {"data", r["data"]}, {"metadata", r["metadata"]}}, false);
    if (!error_.is_null())
        sink({{"type", "error"},
              {"name", error_["name"]},
              {"value", error_["value"]},
              {"traceback", error_["traceback"]}},
             false);
}

void execution::emit(const nlohmann::json& event, bool last) {
    for (auto& s : sinks_) s(event, last);
}

}  // namespace callisto::gateway::interpreter
