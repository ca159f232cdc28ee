#pragma once
// An in-process stand-in for a kernel: ROUTER shell/control/stdin, PUB iopub and REP heartbeat
// bound on ipc paths, answered from its own thread. It signs like ipykernel and can be told to
// misbehave (stay silent, skip heartbeats, send a badly signed message).

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "kernelproto/connection_info.hpp"
#include "kernelproto/hmac_signer.hpp"
#include "kernelproto/message.hpp"

namespace callisto::transport::testing {

// Behaviour by execute_request code:
//   "burst:N"   publish N iopub streams with text "0".."N-1", then reply
//   "raise:N"   publish an error whose evalue is N bytes, reply with it (status error), idle
//   "input:P"   send input_request (prompt P) on stdin to the shell sender's identity; on the
//               input_reply publish a stream "got:<value>" and reply
//   otherwise   publish a stream echoing the code, then reply
// A silent request gets only its execute_reply.
class fake_kernel {
public:
    // The connection a kernel bound at "<prefix>-1" .. "<prefix>-5" would have.
    static kernelproto::connection_info info_for(const std::string& prefix, const std::string& key);

    fake_kernel(const std::string& prefix, const std::string& key);
    ~fake_kernel();
    fake_kernel(const fake_kernel&) = delete;
    fake_kernel& operator=(const fake_kernel&) = delete;

    const kernelproto::connection_info& info() const { return info_; }

    std::atomic<bool> answer_heartbeat{true};
    std::atomic<bool> answer_kernel_info{true};  // reply to kernel_info_request on shell
    std::atomic<bool> publish_status{true};      // status busy/idle around kernel_info
    // kernel_info_requests answered with no status on iopub first, as when the gateway's
    // subscription has not reached the kernel yet (ZeroMQ's slow joiner).
    std::atomic<int> unpublished_kernel_infos{0};

    // Publishes one iopub message signed with the wrong key.
    void publish_badly_signed() { bad_to_send_.fetch_add(1); }

    int kernel_info_requests() const { return kernel_info_requests_.load(); }
    int execute_requests() const { return execute_requests_.load(); }
    std::vector<std::string> shell_identities() const;

private:
    void run();
    void on_request(zmq::socket_t& socket, kernelproto::message req);
    void on_stdin(kernelproto::message msg);
    void on_execute(kernelproto::message req);
    void finish_execute(const kernelproto::message& req, bool silent);
    void publish(const std::string& type, const nlohmann::json& content,
                 const kernelproto::message& parent);
    void reply(zmq::socket_t& socket, const std::string& type, const nlohmann::json& content,
               const kernelproto::message& parent);
    void send_all(zmq::socket_t& socket, const std::vector<std::string>& frames);

    kernelproto::connection_info info_;
    kernelproto::hmac_signer signer_;
    std::string session_;
    zmq::context_t ctx_;
    zmq::socket_t shell_, control_, stdin_, iopub_, hb_;

    std::atomic<bool> stop_{false};
    std::atomic<int> bad_to_send_{0};
    std::atomic<int> kernel_info_requests_{0};
    std::atomic<int> execute_requests_{0};
    int execution_count_ = 0;
    kernelproto::message waiting_for_input_;
    bool input_pending_ = false;

    mutable std::mutex mutex_;
    std::vector<std::string> shell_identities_;

    std::thread thread_;
};

}  // namespace callisto::transport::testing
