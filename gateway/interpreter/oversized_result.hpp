#pragma once
// How a MIME value too large to inline becomes a file in the context's workdir: binary types
// arrive base64-encoded in Jupyter messages and are written decoded, so the file opens as
// what it is (its name's extension: common/media_types.hpp). Pure helpers.

#include <string_view>

namespace callisto::gateway::interpreter {

// image/png, image/jpeg, image/gif, image/webp, application/pdf, ...: base64 in the message.
bool is_base64_mime(std::string_view mime);

}  // namespace callisto::gateway::interpreter
