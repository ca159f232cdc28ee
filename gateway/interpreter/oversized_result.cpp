#include "gateway/interpreter/oversized_result.hpp"

namespace callisto::gateway::interpreter {

bool is_base64_mime(std::string_view mime) {
    return (mime.starts_with("image/") && mime != "image/svg+xml") || mime == "application/pdf";
}

}  // namespace callisto::gateway::interpreter
