#include "gateway/interpreter/execution_recorder.hpp"

#include "common/encoding.hpp"
#include "common/media_types.hpp"
#include "gateway/interpreter/ansi_text.hpp"
#include "gateway/interpreter/oversized_result.hpp"
#include "gateway/interpreter/result_descriptions.hpp"
#include "gateway/kernels/output/output_fields.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::interpreter {

using kernelproto::channel;

namespace {
std::size_t value_size(const nlohmann::json& v) {
    return v.is_string() ? v.get_ref<const std::string&>().size() : v.dump().size();
}
}  // namespace

execution_recorder::execution_recorder(std::shared_ptr<execution> exec, std::string request_msg_id,
                                       recorder_limits limits, file_writer write_file,
                                       std::string no_file_reason)
    : exec_(std::move(exec)),
      request_msg_id_(std::move(request_msg_id)),
      limits_(limits),
      write_file_(std::move(write_file)),
      no_file_reason_(std::move(no_file_reason)) {}

bool execution_recorder::on_message(channel ch, const kernelproto::message& msg) {
    if (msg.parent_msg_id != request_msg_id_) return complete();
    auto content = kernelproto::parse_untrusted_json(msg.content).value;
    if (!content.is_object()) return false;
    if (ch == channel::shell && msg.msg_type == "execute_reply") {
        reply_seen_ = true;
        reply_status_ = content.value("status", "error");
        if (content.contains("execution_count") && content["execution_count"].is_number_integer())
            exec_->set_execution_count(content["execution_count"].get<long long>());
    } else if (ch == channel::iopub) {
        on_iopub(msg.msg_type, content);
    }
    return complete();
}

void execution_recorder::on_iopub(const std::string& type, const nlohmann::json& content) {
    if (type == "stream") {
        if (content.contains("text") && content["text"].is_string())
            exec_->add_stream(content.value("name", "stdout"),
                              content["text"].get_ref<const std::string&>());
    } else if (type == "execute_result" || type == "display_data") {
        if (!content.contains("data") || !content["data"].is_object()) return;
        const std::size_t index = results_seen_++;
        auto data = cap_bundle(content["data"], index);
        exec_->add_result(std::move(data), cap_metadata(content, index), type == "execute_result");
        if (type == "execute_result" && content.contains("execution_count") &&
            content["execution_count"].is_number_integer())
            exec_->set_execution_count(content["execution_count"].get<long long>());
    } else if (type == "error") {
        record_error(content);
    } else if (type == "status") {
        if (content.value("execution_state", "") == "idle") idle_seen_ = true;
    }
}

void execution_recorder::record_error(const nlohmann::json& content) {
    // Plain text unless the client asked for the colours (a terminal-like frontend).
    const bool raw = exec_->request().keep_ansi;
    auto text = [raw](const nlohmann::json& v) {
        if (!v.is_string()) return std::string();
        return raw ? v.get<std::string>() : strip_ansi(v.get_ref<const std::string&>());
    };
    // No stream budget covers these: each is cut here, before anything keeps or sends it.
    auto capped = [this](std::string value, std::size_t max, const char* field) {
        std::size_t cut = 0;
        auto out = kernels::cap_text(value, max, cut);
        if (cut > 0) exec_->note_truncated_field(field, cut);
        return out;
    };
    std::vector<std::string> traceback;
    if (const auto it = content.find("traceback"); it != content.end() && it->is_array())
        for (const auto& line : *it)
            if (line.is_string()) traceback.push_back(text(line));
    std::size_t cut = 0;
    traceback = kernels::cap_lines(std::move(traceback), limits_.text_bytes, cut);
    if (cut > 0) exec_->note_truncated_field("error.traceback", cut);
    auto field = [&content](const char* name) -> const nlohmann::json& {
        static const nlohmann::json none;
        const auto it = content.find(name);
        return it == content.end() ? none : *it;
    };
    exec_->set_error(capped(text(field("ename")), limits_.error_name_bytes, "error.name"),
                     capped(text(field("evalue")), limits_.text_bytes, "error.value"),
                     std::move(traceback));
}

nlohmann::json execution_recorder::cap_metadata(const nlohmann::json& content, std::size_t index) {
    const auto it = content.find("metadata");
    if (it == content.end() || !it->is_object() || it->empty()) return nlohmann::json::object();
    const std::size_t size =
        it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
    // Metadata is a few keys (an image's size, a flag); it shares the results' budget.
    const std::size_t left = limits_.results_budget_bytes > results_bytes_
                                 ? limits_.results_budget_bytes - results_bytes_
                                 : 0;
    if (size <= limits_.metadata_bytes && size <= left) {
        results_bytes_ += size;
        return *it;
    }
    exec_->note_truncated_field("results[" + std::to_string(index) + "].metadata", size);
    return nlohmann::json::object();
}

nlohmann::json execution_recorder::cap_bundle(const nlohmann::json& data, std::size_t index) {
    nlohmann::json out = nlohmann::json::object();
    const bool keep_descriptions = exec_->request().keep_result_descriptions;
    for (auto& [mime, value] : data.items()) {
        // Left out before they count against any cap: no one but E2B reads them.
        if (!keep_descriptions && is_result_description_mime(mime)) continue;
        const std::size_t size = value_size(value);
        // Inline while it fits both the per-result cap and what is left of the execution's
        // budget; a cell that displays a thousand images keeps the gateway's memory bounded.
        const std::size_t left = limits_.results_budget_bytes > results_bytes_
                                     ? limits_.results_budget_bytes - results_bytes_
                                     : 0;
        if (size <= limits_.result_cap_bytes && size <= left) {
            results_bytes_ += size;
            out[mime] = value;
            continue;
        }
        std::string bytes = value.is_string() ? value.get<std::string>() : value.dump();
        if (is_base64_mime(mime)) {
            if (auto decoded = decode_base64(bytes)) bytes = std::move(*decoded);
        }
        const std::string name =
            exec_->id() + "-" + std::to_string(index) + std::string(extension_for(mime));
        if (const std::string relative = write_file_ ? write_file_(name, bytes) : "";
            !relative.empty()) {
            out[mime] = {{"file", relative}, {"bytes", bytes.size()}};
            exec_->note_truncated_result(mime, size, relative);
        } else {
            out[mime] = "[... " + std::to_string(size) + " bytes dropped: over the result caps, " +
                        no_file_reason_ + "; use a context to get it as a file ...]";
            exec_->note_truncated_result(mime, size, "");
        }
    }
    return out;
}

}  // namespace callisto::gateway::interpreter
