#pragma once
// The body of envd's POST /files?path=: application/octet-stream, the file's bytes for `path`
// (the SDK's choice for streams, envd >= 0.5.7), or multipart/form-data, each part a field
// named "file" whose filename is its E2B path; `path`, when given, names where the one file
// of the form goes (the SDK's write(path, data) sends both). Pure: every bad form is
// unit-tested. Nothing of the body is copied: each file is a view of it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/e2b/envd_files.hpp"

namespace callisto::gateway::e2b {

struct envd_upload_file {
    std::string path;          // workdir-relative, resolved
    std::string_view content;  // a view of the body
};

// `query_path`: the query's path ("" when absent). A gzip Content-Encoding is refused (the
// SDK sends it only when asked to). nullopt and the refusal (invalid_argument) otherwise.
std::optional<std::vector<envd_upload_file>> parse_envd_upload(std::string_view body,
                                                               std::string_view content_type,
                                                               std::string_view content_encoding,
                                                               std::string_view query_path,
                                                               envd_error& error);

}  // namespace callisto::gateway::e2b
