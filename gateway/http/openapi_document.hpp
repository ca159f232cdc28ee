#pragma once
// docs/openapi.json, compiled into the binary (cmake/embed_file.cmake generates the
// definition at build time), so GET /openapi.json describes the running server and does not
// depend on the source tree.

#include <string_view>

namespace callisto::gateway {

// The document's bytes, exactly as in docs/openapi.json.
std::string_view openapi_document();

}  // namespace callisto::gateway
