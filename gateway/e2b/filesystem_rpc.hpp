#pragma once
// envd's filesystem.Filesystem service, its unary methods (Stat, ListDir, MakeDir, Move,
// Remove) with Connect's JSON codec: the request's JSON (proto3's mapping: camelCase names,
// int64 as strings), the call on the sandbox's envd_files, and the answer: 200 and the
// response message, or Connect's error, {"code": "not_found", "message"} with its status.
// The SDK reads not_found from Stat as exists() == false and already_exists from MakeDir as
// false. WatchDir is a stream of its own (watch_rpc.hpp, directory_watch.hpp); the polling
// watcher methods are not there (unimplemented).

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gateway/e2b/envd_files.hpp"
#include "gateway/http/http_message.hpp"

namespace callisto::gateway::e2b {

// EntryInfo in proto3 JSON: type as its enum name, size as a string, modifiedTime as RFC 3339
// with nanoseconds, symlinkTarget only for a link.
nlohmann::json entry_info_json(const envd_entry& e);

// RFC 3339 in UTC, with 9 fractional digits unless they are all zero (google.protobuf.Timestamp).
std::string rfc3339(const struct timespec& t);

class filesystem_rpc {
public:
    filesystem_rpc(const envd_files& files, std::size_t max_entries);

    // `method` is the path's last segment ("Stat"); `content_type` the request's. Blocking.
    http_response call(std::string_view method, std::string_view content_type,
                       std::string_view body) const;

private:
    const envd_files& files_;
    const std::size_t max_entries_;
};

// Connect's unary requests are application/json here (the SDK's useBinaryFormat: false);
// the proto codec is refused with 415 as Connect says.
bool is_connect_json(std::string_view content_type);

}  // namespace callisto::gateway::e2b
