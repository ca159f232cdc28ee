#include "tests/transport/fake_kernel.hpp"

#include <chrono>
#include <string_view>

#include "kernelproto/ids.hpp"
#include "kernelproto/wire_codec.hpp"

namespace callisto::transport::testing {
namespace {

namespace kp = callisto::kernelproto;

bool recv_frames(zmq::socket_t& socket, std::vector<std::string>& frames) {
    frames.clear();
    zmq::message_t part;
    if (!socket.recv(part, zmq::recv_flags::dontwait)) return false;
    for (;;) {
        frames.push_back(part.to_string());
        if (!part.more()) return true;
        if (!socket.recv(part, zmq::recv_flags::dontwait)) return true;
    }
}

zmq::socket_t bind_socket(zmq::context_t& ctx, zmq::socket_type type, const std::string& endpoint) {
    zmq::socket_t s(ctx, type);
    s.set(zmq::sockopt::linger, 0);
    // The tests count every message: the fake kernel never drops one at a high-water mark.
    s.set(zmq::sockopt::sndhwm, 0);
    s.set(zmq::sockopt::rcvhwm, 0);
    s.bind(endpoint);
    return s;
}

}  // namespace

kp::connection_info fake_kernel::info_for(const std::string& prefix, const std::string& key) {
    kp::connection_info info;
    info.transport = "ipc";
    info.ip = prefix;
    info.shell_port = 1;
    info.iopub_port = 2;
    info.stdin_port = 3;
    info.control_port = 4;
    info.hb_port = 5;
    info.key = key;
    info.kernel_name = "fake";
    return info;
}

fake_kernel::fake_kernel(const std::string& prefix, const std::string& key)
    : info_(info_for(prefix, key)), signer_(key), session_(kp::new_uuid()) {
    shell_ = bind_socket(ctx_, zmq::socket_type::router, info_.endpoint(kp::channel::shell));
    control_ = bind_socket(ctx_, zmq::socket_type::router, info_.endpoint(kp::channel::control));
    stdin_ = bind_socket(ctx_, zmq::socket_type::router, info_.endpoint(kp::channel::stdin_));
    iopub_ = bind_socket(ctx_, zmq::socket_type::pub, info_.endpoint(kp::channel::iopub));
    hb_ = bind_socket(ctx_, zmq::socket_type::rep, info_.heartbeat_endpoint());
    // Sockets move to the kernel thread; starting a thread is the full barrier ZMQ asks for.
    thread_ = std::thread([this] { run(); });
}

fake_kernel::~fake_kernel() {
    stop_ = true;
    thread_.join();
}

std::vector<std::string> fake_kernel::shell_identities() const {
    std::lock_guard lock(mutex_);
    return shell_identities_;
}

void fake_kernel::run() {
    std::vector<std::string> frames;
    while (!stop_) {
        std::vector<zmq_pollitem_t> items = {
            {shell_.handle(), 0, ZMQ_POLLIN, 0},
            {control_.handle(), 0, ZMQ_POLLIN, 0},
            {stdin_.handle(), 0, ZMQ_POLLIN, 0},
        };
        // A kernel that stops answering leaves the pings queued, as a stuck process would.
        if (answer_heartbeat) items.push_back({hb_.handle(), 0, ZMQ_POLLIN, 0});
        zmq::poll(items, std::chrono::milliseconds(10));

        for (; bad_to_send_ > 0; --bad_to_send_) {
            kp::message msg =
                kp::make_message("stream", {{"name", "stdout"}, {"text", "x"}}, session_);
            msg.identities = {"kernel.fake.stream"};
            send_all(iopub_, kp::encode(msg, kp::hmac_signer("not the key")));
        }
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (!(items[i].revents & ZMQ_POLLIN)) continue;
            if (i == 3) {
                zmq::message_t ping;
                while (hb_.recv(ping, zmq::recv_flags::dontwait)) {
                    hb_.send(ping, zmq::send_flags::none);
                }
                continue;
            }
            zmq::socket_t& socket = i == 0 ? shell_ : i == 1 ? control_ : stdin_;
            while (recv_frames(socket, frames)) {
                std::error_code ec;
                kp::message msg = kp::decode(std::move(frames), signer_, ec);
                if (ec) continue;
                if (i == 2) {
                    on_stdin(std::move(msg));
                } else {
                    on_request(socket, std::move(msg));
                }
            }
        }
    }
}

void fake_kernel::on_request(zmq::socket_t& socket, kp::message req) {
    if (&socket == &shell_) {
        std::lock_guard lock(mutex_);
        if (!req.identities.empty()) shell_identities_.push_back(req.identities.front());
    }
    if (req.msg_type == "kernel_info_request") {
        const bool unpublished = kernel_info_requests_.fetch_add(1) < unpublished_kernel_infos;
        if (publish_status && !unpublished) publish("status", {{"execution_state", "busy"}}, req);
        if (answer_kernel_info || &socket != &shell_) {
            reply(socket, "kernel_info_reply",
                  {{"status", "ok"},
                   {"protocol_version", "5.3"},
                   {"implementation", "fake"},
                   {"implementation_version", "0"},
                   {"language_info", {{"name", "fake"}}},
                   {"banner", ""}},
                  req);
        }
        if (publish_status && !unpublished) publish("status", {{"execution_state", "idle"}}, req);
        return;
    }
    if (req.msg_type == "execute_request" && &socket == &shell_) {
        on_execute(std::move(req));
        return;
    }
    std::string type = req.msg_type;
    if (type.ends_with("_request")) type.replace(type.size() - 8, 8, "_reply");
    reply(socket, type, {{"status", "ok"}}, req);
}

void fake_kernel::on_execute(kp::message req) {
    execute_requests_.fetch_add(1);
    auto content = nlohmann::json::parse(req.content);
    std::string code = content.value("code", "");
    bool silent = content.value("silent", false);
    if (!silent) publish("status", {{"execution_state", "busy"}}, req);
    if (code.starts_with("burst:")) {
        int n = std::stoi(code.substr(6));
        for (int i = 0; i < n; ++i) {
            publish("stream", {{"name", "stdout"}, {"text", std::to_string(i)}}, req);
        }
    } else if (code.starts_with("raise:")) {
        // An error whose value is N bytes, on iopub and in the reply, as ipykernel sends one.
        const nlohmann::json error = {{"ename", "ValueError"},
                                      {"evalue", std::string(std::stoul(code.substr(6)), 'x')},
                                      {"traceback", nlohmann::json::array()}};
        publish("error", error, req);
        auto reply_content = error;
        reply_content["status"] = "error";
        reply_content["execution_count"] = ++execution_count_;
        reply(shell_, "execute_reply", reply_content, req);
        publish("status", {{"execution_state", "idle"}}, req);
        return;
    } else if (code.starts_with("input:")) {
        kp::message request =
            kp::make_message("input_request", {{"prompt", code.substr(6)}, {"password", false}},
                             session_, "kernel", &req);
        // ipykernel's rule: stdin goes to the identity the shell request came from.
        request.identities = req.identities;
        send_all(stdin_, kp::encode(request, signer_));
        waiting_for_input_ = std::move(req);
        input_pending_ = true;
        return;
    } else if (!silent) {
        publish("stream", {{"name", "stdout"}, {"text", code}}, req);
    }
    finish_execute(req, silent);
}

void fake_kernel::on_stdin(kp::message msg) {
    if (msg.msg_type != "input_reply" || !input_pending_) return;
    auto content = nlohmann::json::parse(msg.content);
    publish("stream", {{"name", "stdout"}, {"text", "got:" + content.value("value", "")}},
            waiting_for_input_);
    input_pending_ = false;
    finish_execute(waiting_for_input_, false);
}

void fake_kernel::finish_execute(const kp::message& req, bool silent) {
    reply(shell_, "execute_reply",
          {{"status", "ok"},
           {"execution_count", ++execution_count_},
           {"user_expressions", nlohmann::json::object()}},
          req);
    if (!silent) publish("status", {{"execution_state", "idle"}}, req);
}

void fake_kernel::publish(const std::string& type, const nlohmann::json& content,
                          const kp::message& parent) {
    kp::message msg = kp::make_message(type, content, session_, "kernel", &parent);
    msg.identities = {"kernel.fake." + type};
    send_all(iopub_, kp::encode(msg, signer_));
}

void fake_kernel::reply(zmq::socket_t& socket, const std::string& type,
                        const nlohmann::json& content, const kp::message& parent) {
    kp::message msg = kp::make_message(type, content, session_, "kernel", &parent);
    msg.identities = parent.identities;
    send_all(socket, kp::encode(msg, signer_));
}

void fake_kernel::send_all(zmq::socket_t& socket, const std::vector<std::string>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
        auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
        socket.send(zmq::buffer(frames[i]), flags);
    }
}

}  // namespace callisto::transport::testing
