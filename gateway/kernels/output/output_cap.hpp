#pragma once
// Caps on the output one execution sends to a kernel's Jupyter WebSocket clients, so a runaway
// loop cannot flood a browser (or the replay buffer). One instance per kernel, on its strand,
// so every client sees the same thing and a reconnecting client replays the capped stream.
//
// Executions are told apart by the parent msg_id of their iopub messages. Two budgets per
// execution: stream bytes (stdout and stderr) and rich bytes (display_data,
// update_display_data, execute_result). Sizes are the raw content (plus buffers): the relay
// never parses content to count. Everything else (status, execute_input, error,
// clear_output, comms, unknown types) always passes and is not counted.
//
// Pure bookkeeping: it decides, kernel_session makes the messages.

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace callisto::gateway::kernels {

struct output_limits {
    std::size_t stream_bytes = 8u << 20;  // per execution; 0: unlimited
    std::size_t rich_bytes = 64u << 20;   // per execution; 0: unlimited
};

enum class output_kind { stream, rich, other };

// stream, the rich output types, or other (never capped).
output_kind classify_output(std::string_view msg_type);

class output_cap {
public:
    struct verdict {
        enum class action {
            pass,      // relay as it is
            truncate,  // relay the first keep_bytes of the content (stream only), drop the rest
            drop,      // relay nothing
        };
        action what = action::pass;
        std::size_t keep_bytes = 0;
        // Set on the message that first crosses a budget: say so once, after the message.
        bool announce = false;
    };

    struct dropped {
        std::size_t bytes = 0;
        std::size_t messages = 0;
    };
    // What an execution lost, reported once when it finishes. parent is "" for output that had
    // no parent header.
    struct summary {
        std::string parent;
        dropped stream;
        dropped rich;
    };

    // max_tracked: executions remembered at once; the least recently active is forgotten
    // first, so a kernel inventing parent ids cannot grow the gateway's memory.
    explicit output_cap(output_limits limits, std::size_t max_tracked = 256);

    bool enabled() const { return limits_.stream_bytes != 0 || limits_.rich_bytes != 0; }
    const output_limits& limits() const { return limits_; }

    // One output message of `bytes` for the execution `parent`. Only stream output is ever
    // truncated (when can_truncate); rich output is whole or dropped.
    verdict on_output(std::string_view parent, output_kind kind, std::size_t bytes,
                      bool can_truncate = true);

    // The kernel reported idle for `parent`: the summaries of what that execution, and output
    // without a parent since the last idle, lost (none when nothing was dropped). Parentless
    // output gets a fresh budget at each idle. Late output of a finished execution still
    // counts against its budget.
    std::vector<summary> on_idle(std::string_view parent);

    // The kernel restarted: every execution is gone.
    void reset();

    std::size_t tracked() const { return records_.size(); }

private:
    struct budget {
        std::size_t used = 0;
        bool exceeded = false;
        dropped lost;  // since the last summary
    };
    struct record {
        std::string parent;
        budget stream;
        budget rich;
    };
    using record_list = std::list<record>;

    record& touch(std::string_view parent);
    static std::optional<summary> take_summary(record& r);

    output_limits limits_;
    std::size_t max_tracked_;
    record_list records_;  // most recently active first
    std::unordered_map<std::string_view, record_list::iterator> index_;  // keys view records_
};

}  // namespace callisto::gateway::kernels
