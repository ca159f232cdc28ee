#pragma once
// What a message ZeroMQ dropped took with it. A kernel message with a part over the link's
// limit (--kernel-message-limit; 16 MiB for replies) makes ZeroMQ drop it and its connection;
// the reactor connects again (transport::link_events::on_message_dropped). Lost with it, unseen:
// the dropped message, whatever the kernel sent on that channel until the new connection was
// up, and requests still in ZeroMQ's pipe. Nothing would answer their clients, who waited
// until their deadline, or for ever.
//
// A barrier tells what was lost: a kernel_info_request the session sends, on each channel that
// dropped a reply, behind every request it sent before. A kernel handles a channel's requests
// in order (ipykernel, IRkernel and xeus all do), so when the barrier's reply arrives, every
// earlier request on that channel still without its reply has lost it. After a drop on iopub,
// the barrier goes on shell, and the kernel's status for it on iopub (busy or idle, published
// after the idle of every earlier shell request) says which idles were lost: those of earlier
// requests that have not arrived. A status published before the new subscription reached the
// kernel is lost too, so the session asks again until one arrives.
//
// Pure and single-threaded: the kernel session calls it on its strand.

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernelproto/channel.hpp"

namespace callisto::gateway::kernels {

class drop_recovery {
public:
    struct request {
        std::string msg_id;
        kernelproto::channel channel;
    };
    struct verdict {
        std::vector<std::string> replies_lost;  // requests that will get no reply
        std::vector<std::string> idles_lost;    // shell requests that will get no idle
    };

    // ZeroMQ dropped a message on `ch`. `in_flight`: every request still waiting for its reply;
    // `awaiting_idle`: the shell requests whose idle has not arrived. Returns the channels on
    // which a barrier must now go, shell or control (each then reported by barrier_sent); none
    // for stdin, where no request waits. A later drop replaces the barriers of an earlier one,
    // which prove nothing about what was sent since.
    std::vector<kernelproto::channel> dropped(kernelproto::channel ch,
                                              const std::vector<request>& in_flight,
                                              std::vector<std::string> awaiting_idle);
    void barrier_sent(kernelproto::channel ch, std::string msg_id);

    // Whether a reply or a status answers one of the barriers (of this drop or an earlier
    // one): the session keeps those from its clients.
    bool is_barrier(const std::string& parent_msg_id) const;
    // A barrier's reply, or its status on iopub.
    void barrier_replied(const std::string& parent_msg_id);
    void barrier_status(const std::string& parent_msg_id);

    // The shell barrier has its reply, but no status of it came on iopub: send another.
    bool needs_another_status_barrier() const;
    // Gives up on the status: its idles are judged lost as they are.
    void stop_waiting_for_status() { status_in_ = true; }

    // What was lost, once every barrier needed is in (then the recovery is over); nullopt
    // before, and when no drop is being looked into.
    std::optional<verdict> take_verdict();
    bool active() const { return active_; }
    // A new process: nothing of the old one's matters.
    void reset() { *this = drop_recovery(); }

private:
    bool active_ = false;
    std::set<kernelproto::channel> channels_;  // where messages were dropped
    std::vector<std::string> replies_;      // waiting for a reply when the barriers went, on those
    std::vector<std::string> idles_;        // waiting for an idle then (after an iopub drop)
    std::set<std::string> shell_barriers_;  // this drop's, each behind all the verdict looks at
    std::string control_barrier_;           // this drop's
    bool shell_in_ = true, control_in_ = true, status_in_ = true;
    std::set<std::string> every_barrier_;  // to keep their answers from clients
};

}  // namespace callisto::gateway::kernels
