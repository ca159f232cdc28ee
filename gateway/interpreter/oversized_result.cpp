#include "gateway/interpreter/oversized_result.hpp"

namespace callisto::gateway::interpreter {

bool is_base64_mime(std::string_view mime) {
    return (mime.starts_with("image/") && mime != "image/svg+xml") || mime == "application/pdf";
}

std::string file_extension_for(std::string_view mime) {
    if (mime == "image/png") return ".png";
    if (mime == "image/jpeg") return ".jpg";
    if (mime == "image/gif") return ".gif";
    if (mime == "image/webp") return ".webp";
    if (mime == "image/svg+xml") return ".svg";
    if (mime == "application/pdf") return ".pdf";
    if (mime == "text/html") return ".html";
    if (mime == "text/markdown") return ".md";
    if (mime == "text/plain") return ".txt";
    if (mime == "application/json" || mime.ends_with("+json")) return ".json";
    return ".bin";
}

}  // namespace callisto::gateway::interpreter
