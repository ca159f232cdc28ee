#include "gateway/jupyter_api/client_frame_errors.hpp"

#include <nlohmann/json.hpp>

namespace callisto::gateway::jupyter_api {

kernelproto::message protocol_error_message(std::string_view reason,
                                            const kernelproto::message* rejected) {
    const std::string text(reason);
    nlohmann::json content = {
        {"ename", "CallistoProtocolError"},
        {"evalue", text},
        {"traceback", nlohmann::json::array({"CallistoProtocolError: " + text})}};
    const bool addressable = rejected && !rejected->msg_id.empty();
    return kernelproto::make_message("error", content, "callisto", "callisto",
                                     addressable ? rejected : nullptr);
}

}  // namespace callisto::gateway::jupyter_api
