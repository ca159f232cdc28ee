#include "gateway/http/static_files.hpp"

#include <fstream>

#include <boost/beast/http/field.hpp>

#include "common/byte_size.hpp"
#include "common/media_types.hpp"

namespace callisto::gateway {

namespace fs = std::filesystem;

std::string mime_type(const fs::path& file) {
    const auto type = media_type_of(file.filename().string());
    if (!type) return "application/octet-stream";
    // The UI's text is UTF-8; say so rather than leave browsers to guess.
    if (type->starts_with("text/")) return std::string(*type) + "; charset=utf-8";
    return std::string(*type);
}

http_response serve_file(const fs::path& root, const std::string& relative, std::size_t max_bytes) {
    std::error_code ec;
    const fs::path base = fs::canonical(root, ec);
    if (ec) return error_response(http::status::not_found, "no such file");
    const fs::path target = fs::weakly_canonical(base / relative, ec);
    if (ec) return error_response(http::status::not_found, "no such file");
    // The resolved path must stay under the root: no "..", no symlink leading out.
    auto [root_end, _] = std::mismatch(base.begin(), base.end(), target.begin(), target.end());
    if (root_end != base.end()) return error_response(http::status::not_found, "no such file");
    if (!fs::is_regular_file(target, ec))
        return error_response(http::status::not_found, "no such file: " + relative);
    auto size = fs::file_size(target, ec);
    if (ec || size > max_bytes)
        return error_response(http::status::payload_too_large,
                              "file too large to serve: static files (the web UI, kernelspec "
                              "resources) are served up to a fixed " +
                                  describe_bytes(max_bytes));

    std::ifstream in(target, std::ios::binary);
    std::string body(size, '\0');
    in.read(body.data(), static_cast<std::streamsize>(size));
    if (in.bad()) return error_response(http::status::internal_server_error, "could not read file");
    body.resize(static_cast<std::size_t>(in.gcount()));  // a file cut since its size was read
    http_response res{http::status::ok, 11};
    res.set(http::field::content_type, mime_type(target));
    // Revalidated on every load: the web UI is ten ES modules, and an hour of caching could
    // mix an upgrade's new modules with old ones ("does not provide an export named ...").
    res.set(http::field::cache_control, "no-cache");
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

}  // namespace callisto::gateway
