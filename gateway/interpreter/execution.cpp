#include "gateway/interpreter/execution.hpp"

#include <stdexcept>

#include "gateway/kernels/output/output_fields.hpp"
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

void execution::add_result(nlohmann::json bundle, nlohmann::json metadata, bool main) {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    nlohmann::json r = {{"data", std::move(bundle)}, {"metadata", std::move(metadata)}};
    emit({{"type", "result"}, {"data", r["data"]}, {"metadata", r["metadata"]}, {"main", main}});
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

void execution::note_truncated_field(std::string field, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    truncated_fields_.push_back({{"field", std::move(field)}, {"bytes", bytes}});
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
    if (restored_) return *restored_;
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
          {"results", truncated_results_},
          {"fields", truncated_fields_}}},
    };
    j["timeout"] = request_.timeout
                       ? nlohmann::json(static_cast<double>(request_.timeout->count()) / 1000)
                       : nlohmann::json();
    if (!request_.idempotency_key.empty()) j["idempotency_key"] = request_.idempotency_key;
    if (request_.language) j["language"] = languages::to_string(*request_.language);
    if (state_preserved_) j["state_preserved"] = *state_preserved_;
    return j;
}

nlohmann::json execution::summary() const {
    std::lock_guard lock(mutex_);
    if (restored_) {
        nlohmann::json j = {{"id", id_},
                            {"status", (*restored_)["status"]},
                            {"created_at", (*restored_)["created_at"]},
                            {"restored", true}};
        if (restored_->contains("language")) j["language"] = (*restored_)["language"];
        return j;
    }
    nlohmann::json j = {{"id", id_},
                        {"status", to_string(status_)},
                        {"created_at", kernelproto::format_iso_time(created_at_)}};
    if (request_.language) j["language"] = languages::to_string(*request_.language);
    return j;
}

namespace {

constexpr std::size_t recorded_text_bytes = 2048;
// All the results' text a record keeps of one execution: many small results add up too.
constexpr std::size_t recorded_results_bytes = 8192;

}  // namespace

nlohmann::json execution::to_record() const {
    auto j = to_json();
    for (const char* name : {"stdout", "stderr"})
        j[name] = kernels::record_tail(j.value(name, std::string()), recorded_text_bytes);
    if (auto& error = j["error"]; error.is_object()) {
        for (const char* name : {"name", "value"})
            if (error.contains(name) && error[name].is_string())
                error[name] =
                    kernels::record_tail(error[name].get<std::string>(), recorded_text_bytes);
        // The last lines of the traceback: where it was raised, and what.
        if (auto& traceback = error["traceback"]; traceback.is_array()) {
            nlohmann::json kept = nlohmann::json::array();
            std::size_t used = 0;
            for (auto line = traceback.rbegin(); line != traceback.rend(); ++line) {
                if (!line->is_string()) continue;
                auto text = kernels::record_tail(line->get<std::string>(), recorded_text_bytes);
                if (used + text.size() > recorded_text_bytes && !kept.empty()) break;
                used += text.size();
                kept.insert(kept.begin(), std::move(text));
            }
            traceback = std::move(kept);
        }
    }
    nlohmann::json results = nlohmann::json::array();
    std::size_t used = 0, left_out = 0;
    for (const auto& r : j.value("results", nlohmann::json::array())) {
        if (!r.is_object() || !r.contains("data") || !r["data"].is_object()) continue;
        const auto text = r["data"].find("text/plain");
        if (text == r["data"].end() || !text->is_string()) continue;
        const auto size = text->get_ref<const std::string&>().size();
        if (size > recorded_text_bytes) continue;
        if (used + size > recorded_results_bytes) {
            left_out += size;
            continue;
        }
        used += size;
        results.push_back(
            {{"data", {{"text/plain", *text}}}, {"metadata", nlohmann::json::object()}});
    }
    j["results"] = std::move(results);
    if (left_out > 0)
        j["truncated"]["fields"].push_back({{"field", "results"}, {"bytes", left_out}});
    return j;
}

std::shared_ptr<execution> execution::restored(nlohmann::json saved,
                                               const std::string& context_id) {
    if (!saved.is_object()) throw std::invalid_argument("an execution record is not an object");
    auto text = [&](const char* name) {
        const auto it = saved.find(name);
        if (it == saved.end() || !it->is_string())
            throw std::invalid_argument(std::string("an execution record has no string '") + name +
                                        "'");
        return it->get<std::string>();
    };
    const std::string id = text("id");
    const std::string status = text("status");
    text("created_at");
    std::optional<execution_status> known;
    for (auto s :
         {execution_status::queued, execution_status::running, execution_status::ok,
          execution_status::error, execution_status::timeout, execution_status::interrupted})
        if (to_string(s) == status) known = s;
    if (!known) throw std::invalid_argument("an execution record has status '" + status + "'");
    if (*known == execution_status::queued || *known == execution_status::running) {
        const bool ran = *known == execution_status::running;
        known = execution_status::error;
        saved["status"] = "error";
        saved["error"] = {
            {"name", "GatewayRestarted"},
            {"value", ran ? "the gateway restarted while this ran; the kernel went on running it, "
                            "and what it printed and returned since then is lost"
                          : "the gateway restarted while this waited in the queue; it never ran"},
            {"traceback", nlohmann::json::array()}};
        saved["state_preserved"] = true;
    }
    saved["restored"] = true;
    saved["context_id"] = context_id;
    // What the API promises of an execution holds for a record read back, whatever it lacks.
    auto ensure = [&](const char* name, bool (nlohmann::json::*is)() const noexcept,
                      nlohmann::json fallback) {
        const auto it = saved.find(name);
        if (it == saved.end() || !((*it).*is)()) saved[name] = std::move(fallback);
    };
    ensure("stdout", &nlohmann::json::is_string, "");
    ensure("stderr", &nlohmann::json::is_string, "");
    ensure("results", &nlohmann::json::is_array, nlohmann::json::array());
    ensure("queue_ms", &nlohmann::json::is_number_unsigned, 0);
    ensure("duration_ms", &nlohmann::json::is_number_unsigned, 0);
    ensure("truncated", &nlohmann::json::is_object,
           {{"stdout_bytes", 0}, {"stderr_bytes", 0}, {"results", nlohmann::json::array()}});
    if (auto& t = saved["truncated"]; !t.contains("fields") || !t["fields"].is_array())
        t["fields"] = nlohmann::json::array();
    if (!saved.contains("error") || !(saved["error"].is_object() || saved["error"].is_null()))
        saved["error"] = nullptr;
    if (!saved.contains("execution_count") ||
        !(saved["execution_count"].is_number_integer() || saved["execution_count"].is_null()))
        saved["execution_count"] = nullptr;

    execution_request request;
    if (const auto key = saved.find("idempotency_key"); key != saved.end() && key->is_string())
        request.idempotency_key = key->get<std::string>();
    auto e = std::make_shared<execution>(id, context_id, std::move(request), 0);
    e->status_ = *known;
    e->ended_ = e->started_ = steady::now();
    e->restored_ = std::move(saved);
    return e;
}

void execution::subscribe(event_sink sink, bool from_start) {
    std::lock_guard lock(mutex_);
    if (from_start && !restored_) replay_locked(sink);
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
