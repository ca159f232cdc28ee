#include "gateway/e2b/envd_upload.hpp"

#include <algorithm>

#include "gateway/http/beast.hpp"
#include "gateway/interpreter/api/multipart_form.hpp"

namespace callisto::gateway::e2b {

namespace {

std::string_view media_type(std::string_view content_type) {
    auto media = content_type.substr(0, content_type.find(';'));
    while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
    return media;
}

}  // namespace

std::optional<std::vector<envd_upload_file>> parse_envd_upload(std::string_view body,
                                                               std::string_view content_type,
                                                               std::string_view content_encoding,
                                                               std::string_view query_path,
                                                               envd_error& error) {
    auto refuse = [&](std::string why) -> std::optional<std::vector<envd_upload_file>> {
        error = {connect_code::invalid_argument, 400, std::move(why)};
        return std::nullopt;
    };
    if (!content_encoding.empty() && !beast::iequals(content_encoding, "identity"))
        return refuse("Content-Encoding " + std::string(content_encoding) +
                      " is not taken here: send the file's bytes as they are");
    const auto media = media_type(content_type);
    if (beast::iequals(media, "application/octet-stream")) {
        if (query_path.empty()) return refuse("the query's 'path' is required for a raw upload");
        auto path = resolve_envd_path(query_path, error);
        if (!path) return std::nullopt;
        if (path->empty())
            return refuse("'" + std::string(query_path) + "' is the sandbox's home, a directory");
        return std::vector<envd_upload_file>{{std::move(*path), body}};
    }
    if (!beast::iequals(media, "multipart/form-data"))
        return refuse(
            "POST the file as application/octet-stream, or as multipart/form-data "
            "with a field named 'file'");
    std::string why;
    auto boundary = interpreter::multipart_boundary(content_type, why);
    if (!boundary) return refuse(why);

    struct part {
        interpreter::multipart_part_header header;
        std::size_t begin = 0;
        std::size_t size = 0;
    };
    std::vector<part> parts;
    interpreter::multipart_parser parser(
        *boundary, interpreter::multipart_limits{},
        [&](const interpreter::multipart_part_header& h) {
            parts.push_back({h, 0, 0});
        },
        [&](std::string_view data, std::size_t offset) {
            auto& p = parts.back();
            if (p.size == 0) p.begin = offset;
            p.size += data.size();
        },
        [] {});
    if (!parser.parse_whole(body)) return refuse("malformed multipart form: " + parser.error());
    if (parts.empty()) return refuse("the form holds no file");
    for (const auto& p : parts)
        if (p.header.name != "file")
            return refuse("unknown form field '" + p.header.name.substr(0, 64) +
                          "': the files go in fields named 'file'");
    if (!query_path.empty() && parts.size() > 1)
        return refuse("the query's 'path' names one file, and the form holds " +
                      std::to_string(parts.size()) + ": name each by its filename instead");
    std::vector<envd_upload_file> out;
    for (const auto& p : parts) {
        std::string_view where = query_path;
        if (where.empty()) {
            if (!p.header.filename || p.header.filename->empty())
                return refuse("a file of the form has no filename, and the query no 'path'");
            where = *p.header.filename;
        }
        auto path = resolve_envd_path(where, error);
        if (!path) return std::nullopt;
        if (path->empty())
            return refuse("'" + std::string(where) + "' is the sandbox's home, a directory");
        if (std::any_of(out.begin(), out.end(),
                        [&](const envd_upload_file& f) { return f.path == *path; }))
            return refuse("the form names '" + std::string(where) + "' twice");
        out.push_back({std::move(*path), body.substr(p.begin, p.size)});
    }
    return out;
}

}  // namespace callisto::gateway::e2b
