#pragma once
// Turns the kernel's messages about one execute_request into its execution record: the
// streams, the rich results within the caps (a value over them goes to a file, or is replaced
// by a note saying why not; the kernel's result descriptions only where the request keeps
// them) and their metadata within its own (over it: {}), the error with its traceback, each
// field within its cap (output_fields.hpp), the execution count. Pure: it sees messages and
// writes through the callback it is given, so every case is a unit test.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "gateway/interpreter/execution.hpp"
#include "kernelproto/channel.hpp"
#include "kernelproto/message.hpp"

namespace callisto::gateway::interpreter {

struct recorder_limits {
    std::size_t result_cap_bytes = 5 << 20;       // one MIME value inline
    std::size_t results_budget_bytes = 20 << 20;  // all inline results, their metadata included
    std::size_t text_bytes = 1 << 20;             // an error's value; its traceback (the streams')
    std::size_t error_name_bytes = 1024;          // an error's name (a class name)
    std::size_t metadata_bytes = 64 << 10;        // one display's metadata, as JSON
};

class execution_recorder {
public:
    // Stores an oversized value as a file; returns its path relative to the workdir, or "" when
    // it could not (then `no_file_reason` says why in the record).
    using file_writer =
        std::function<std::string(const std::string& name, const std::string& bytes)>;

    execution_recorder(std::shared_ptr<execution> exec, std::string request_msg_id,
                       recorder_limits limits, file_writer write_file, std::string no_file_reason);

    // A message from the kernel; those about other requests are ignored. True once both the
    // execute_reply and the idle status are in: the execution is complete.
    bool on_message(kernelproto::channel ch, const kernelproto::message& msg);

    bool complete() const { return reply_seen_ && idle_seen_; }
    // "ok", "error", "aborted" as the execute_reply said; "" before it.
    const std::string& reply_status() const { return reply_status_; }
    const std::string& request_msg_id() const { return request_msg_id_; }

private:
    void on_iopub(const std::string& type, const nlohmann::json& content);
    nlohmann::json cap_bundle(const nlohmann::json& data, std::size_t index);
    nlohmann::json cap_metadata(const nlohmann::json& content, std::size_t index);
    void record_error(const nlohmann::json& content);

    const std::shared_ptr<execution> exec_;
    const std::string request_msg_id_;
    const recorder_limits limits_;
    const file_writer write_file_;
    const std::string no_file_reason_;
    bool reply_seen_ = false;
    bool idle_seen_ = false;
    std::string reply_status_;
    std::size_t results_seen_ = 0;
    std::size_t results_bytes_ = 0;  // inline so far, against results_budget_bytes
};

}  // namespace callisto::gateway::interpreter
