#include "gateway/interpreter/api/multipart_form.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "gateway/interpreter/workdir_files.hpp"

namespace callisto::gateway::interpreter {

namespace {

constexpr std::size_t max_padding = 64;  // spaces or tabs after a delimiter (RFC 2046 LWSP)

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                              [](char x, char y) { return lower(x) == lower(y); });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// What a client sent, quoted and escaped for an error message.
std::string shown(std::string_view s) {
    std::string cut(s.substr(0, 80));
    return nlohmann::json(cut).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
           (s.size() > 80 ? "..." : "");
}

bool is_token_char(char c) {
    if (c <= 0x20 || c >= 0x7f) return false;
    return std::string_view("()<>@,;:\\\"/[]?={}").find(c) == std::string_view::npos;
}

struct parameter {
    std::string name;  // lower case
    std::string value;
};

// "type; a=b; c="d"" into its type and parameters; false and `error` on a malformed one.
bool split_parameters(std::string_view header, std::string& type, std::vector<parameter>& params,
                      std::string& error) {
    auto semi = header.find(';');
    type = std::string(trim(header.substr(0, semi)));
    std::string_view rest =
        semi == std::string_view::npos ? std::string_view{} : header.substr(semi + 1);
    while (true) {
        rest = trim(rest);
        if (rest.empty()) return true;
        auto eq = rest.find('=');
        if (eq == std::string_view::npos) {
            error = "a parameter without '=' in " + shown(header);
            return false;
        }
        std::string name(trim(rest.substr(0, eq)));
        if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char)) {
            error = "a malformed parameter name in " + shown(header);
            return false;
        }
        std::transform(name.begin(), name.end(), name.begin(), lower);
        rest = trim(rest.substr(eq + 1));
        std::string value;
        if (!rest.empty() && rest.front() == '"') {
            std::size_t i = 1;
            bool closed = false;
            for (; i < rest.size(); ++i) {
                if (rest[i] == '\\' && i + 1 < rest.size()) {
                    value.push_back(rest[++i]);
                } else if (rest[i] == '"') {
                    closed = true;
                    ++i;
                    break;
                } else {
                    value.push_back(rest[i]);
                }
            }
            if (!closed) {
                error = "an unterminated quoted string in " + shown(header);
                return false;
            }
            rest.remove_prefix(i);
            rest = trim(rest);
            if (!rest.empty() && rest.front() != ';') {
                error = "text after a quoted string in " + shown(header);
                return false;
            }
        } else {
            auto end = rest.find(';');
            value = std::string(trim(rest.substr(0, end)));
            rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
        }
        for (const auto& p : params)
            if (p.name == name) {
                error = "parameter '" + name + "' given twice in " + shown(header);
                return false;
            }
        params.push_back({std::move(name), std::move(value)});
        if (!rest.empty()) rest.remove_prefix(1);  // the ';'
    }
}

bool is_boundary_char(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

}  // namespace

std::optional<std::string> multipart_boundary(std::string_view content_type, std::string& error) {
    std::string type;
    std::vector<parameter> params;
    if (!split_parameters(content_type, type, params, error)) {
        error = "malformed Content-Type: " + error;
        return std::nullopt;
    }
    if (!iequals(type, "multipart/form-data")) {
        error = "the Content-Type must be multipart/form-data, not " + shown(type);
        return std::nullopt;
    }
    for (const auto& p : params) {
        if (p.name != "boundary") continue;
        const auto& b = p.value;
        if (b.empty() || b.size() > 70 || b.back() == ' ' ||
            !std::all_of(b.begin(), b.end(), is_boundary_char)) {
            error = "the multipart boundary " + shown(b) +
                    " is invalid: 1 to 70 letters, digits or '()+_,-./:=? (RFC 2046)";
            return std::nullopt;
        }
        return b;
    }
    error = "the multipart/form-data Content-Type has no boundary parameter";
    return std::nullopt;
}

// ---- the push parser ---------------------------------------------------------------------------

multipart_parser::multipart_parser(std::string boundary, multipart_limits limits, part_fn on_part,
                                   data_fn on_data, end_fn on_part_end)
    : delimiter_("\r\n--" + boundary),
      limits_(limits),
      on_part_(std::move(on_part)),
      on_data_(std::move(on_data)),
      on_part_end_(std::move(on_part_end)),
      // The first delimiter may open the body without the CRLF that precedes the others.
      buffer_("\r\n") {}

bool multipart_parser::fail(std::string why) {
    state_ = state::failed;
    error_ = std::move(why);
    buffer_.clear();
    return false;
}

bool multipart_parser::feed(std::string_view bytes) {
    if (state_ == state::failed) return false;
    if (state_ == state::done) return true;  // the epilogue is ignored
    buffer_.append(bytes);
    fed_ += bytes.size();
    while (step()) {
    }
    return state_ != state::failed;
}

bool multipart_parser::finish() {
    if (state_ == state::failed) return false;
    if (state_ != state::done)
        return fail(parts_ == 0 && state_ == state::preamble
                        ? "the body has no multipart boundary line; is the boundary right?"
                        : "the form ends without its closing boundary line (--BOUNDARY--)");
    return true;
}

bool multipart_parser::parse_whole(std::string_view body) {
    constexpr std::size_t piece = 64 * 1024;
    for (std::size_t at = 0; at < body.size(); at += piece)
        if (!feed(body.substr(at, piece))) return false;
    return finish();
}

bool multipart_parser::step() {
    switch (state_) {
        case state::preamble: {
            auto at = buffer_.find(delimiter_);
            if (at == std::string::npos) {
                // Keep only what could still begin a delimiter.
                if (buffer_.size() >= delimiter_.size())
                    buffer_.erase(0, buffer_.size() - (delimiter_.size() - 1));
                return false;
            }
            buffer_.erase(0, at + delimiter_.size());
            state_ = state::after_delimiter;
            return true;
        }
        case state::after_delimiter: {
            if (buffer_.size() < 2) return false;
            if (buffer_.compare(0, 2, "--") == 0) {
                state_ = state::done;
                buffer_.clear();
                return false;
            }
            std::size_t i = 0;
            while (i < buffer_.size() && (buffer_[i] == ' ' || buffer_[i] == '\t')) ++i;
            if (i > max_padding) return fail("too much padding after a boundary line");
            if (buffer_.size() < i + 2) return false;
            if (buffer_.compare(i, 2, "\r\n") != 0)
                return fail(
                    "a boundary line is followed by something other than a line end "
                    "(is the boundary a prefix of the data?)");
            buffer_.erase(0, i + 2);
            if (++parts_ > limits_.max_parts)
                return fail("the form has more than " + std::to_string(limits_.max_parts) +
                            " parts");
            state_ = state::headers;
            return true;
        }
        case state::headers: {
            std::size_t end = 0, skip = 0;
            if (buffer_.starts_with("\r\n")) {
                skip = 2;  // no header at all
            } else if (auto at = buffer_.find("\r\n\r\n"); at != std::string::npos) {
                end = at;
                skip = at + 4;
            } else {
                if (buffer_.size() > limits_.max_header_bytes)
                    return fail("a part's headers are larger than " +
                                std::to_string(limits_.max_header_bytes) + " bytes");
                return false;
            }
            if (end > limits_.max_header_bytes)
                return fail("a part's headers are larger than " +
                            std::to_string(limits_.max_header_bytes) + " bytes");
            if (!parse_headers(std::string_view(buffer_).substr(0, end))) return false;
            buffer_.erase(0, skip);
            state_ = state::body;
            return true;
        }
        case state::body: {
            // Past the first delimiter, so past the made-up CRLF: buffer_ ends the body fed.
            const std::size_t offset = fed_ - buffer_.size();
            auto at = buffer_.find(delimiter_);
            if (at == std::string::npos) {
                if (buffer_.size() >= delimiter_.size()) {
                    const std::size_t safe = buffer_.size() - (delimiter_.size() - 1);
                    on_data_(std::string_view(buffer_).substr(0, safe), offset);
                    buffer_.erase(0, safe);
                }
                return false;
            }
            if (at > 0) on_data_(std::string_view(buffer_).substr(0, at), offset);
            on_part_end_();
            buffer_.erase(0, at + delimiter_.size());
            state_ = state::after_delimiter;
            return true;
        }
        case state::done:
        case state::failed: return false;
    }
    return false;
}

bool multipart_parser::parse_headers(std::string_view block) {
    multipart_part_header part;
    bool disposition = false, type = false;
    while (!block.empty()) {
        auto eol = block.find("\r\n");
        std::string_view line = block.substr(0, eol);
        block = eol == std::string_view::npos ? std::string_view{} : block.substr(eol + 2);
        if (line.empty()) return fail("an empty line inside a part's headers");
        if (line.front() == ' ' || line.front() == '\t')
            return fail("folded header lines are not allowed in a form (RFC 7578)");
        auto colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0)
            return fail("a malformed part header line: " + shown(line));
        const std::string_view name = line.substr(0, colon);
        if (!std::all_of(name.begin(), name.end(), is_token_char))
            return fail("a malformed part header name: " + shown(name));
        const std::string_view value = trim(line.substr(colon + 1));
        if (std::any_of(value.begin(), value.end(),
                        [](char c) { return c == '\0' || c == '\r' || c == '\n'; }))
            return fail("a part header contains a NUL or a bare line break");
        if (iequals(name, "content-disposition")) {
            if (disposition) return fail("a part has two Content-Disposition headers");
            disposition = true;
            std::string kind, error;
            std::vector<parameter> params;
            if (!split_parameters(value, kind, params, error))
                return fail("malformed Content-Disposition: " + error);
            if (!iequals(kind, "form-data"))
                return fail("a part's Content-Disposition must be form-data, not " + shown(kind));
            bool has_name = false;
            for (auto& p : params) {
                if (p.name == "name") {
                    has_name = true;
                    part.name = std::move(p.value);
                } else if (p.name == "filename") {
                    part.filename = std::move(p.value);
                } else if (p.name == "filename*") {
                    return fail(
                        "filename* (RFC 5987) is not accepted in a form; send filename "
                        "as UTF-8 (RFC 7578)");
                }
            }
            if (!has_name) return fail("a part's Content-Disposition has no name parameter");
        } else if (iequals(name, "content-type")) {
            if (type) return fail("a part has two Content-Type headers");
            type = true;
            part.content_type = std::string(value);
        }
        // Other headers (Content-Transfer-Encoding is deprecated by RFC 7578) are ignored.
    }
    if (!disposition) return fail("a part has no Content-Disposition header");
    on_part_(part);
    return true;
}

// ---- the upload rules
// ----------------------------------------------------------------------------

std::optional<std::vector<multipart_file>> parse_upload_form(std::string_view body,
                                                             std::string_view content_type,
                                                             const multipart_limits& limits,
                                                             std::string& error) {
    auto boundary = multipart_boundary(content_type, error);
    if (!boundary) return std::nullopt;

    // A part's bytes are one range of the body: only where it begins and its size are kept.
    struct part {
        multipart_part_header header;
        std::size_t begin = 0;
        std::size_t size = 0;
        std::string_view content;
    };
    std::vector<part> parts;
    bool field_too_big = false;
    multipart_parser parser(
        *boundary, limits,
        [&](const multipart_part_header& h) {
            parts.push_back({h, 0, 0, {}});
        },
        [&](std::string_view data, std::size_t offset) {
            auto& p = parts.back();
            if (!p.header.filename && p.size + data.size() > limits.max_field_bytes) {
                field_too_big = true;
                return;
            }
            if (p.size == 0) p.begin = offset;
            p.size += data.size();
        },
        [] {});
    if (!parser.parse_whole(body)) {
        error = "malformed multipart form: " + parser.error();
        return std::nullopt;
    }
    if (field_too_big) {
        error = "a text field of the form is larger than " +
                std::to_string(limits.max_field_bytes) + " bytes";
        return std::nullopt;
    }

    for (auto& p : parts) p.content = body.substr(p.begin, p.size);

    auto refuse = [&error](std::string why) -> std::optional<std::vector<multipart_file>> {
        error = std::move(why);
        return std::nullopt;
    };
    std::optional<std::string> path_field;
    std::size_t files = 0;
    for (const auto& p : parts) {
        if (p.header.filename) {
            ++files;
            continue;
        }
        if (p.header.name != "path")
            return refuse("unknown form field " + shown(p.header.name) +
                          ": send files (parts with a filename) and at most one 'path' field");
        if (path_field) return refuse("the form has two 'path' fields");
        path_field = std::string(p.content);
    }
    if (files == 0) return refuse("the form has no file (a part with a filename)");
    if (path_field && files != 1)
        return refuse("a 'path' field names one file, and the form has " + std::to_string(files));

    std::vector<multipart_file> out;
    std::set<std::string> seen;
    for (auto& p : parts) {
        if (!p.header.filename) continue;
        std::string path = path_field ? *path_field : *p.header.filename;
        const std::string which =
            "file part " + shown(p.header.name) + (path_field ? " ('path' field)" : " (filename)");
        if (!path_field && path.empty())
            return refuse(which + " has an empty filename; name the file or send a 'path' field");
        if (auto bad = check_relative_path(path))
            return refuse(which + " " + shown(path) + ": " + *bad);
        if (!seen.insert(path).second) return refuse("two files of the form go to " + shown(path));
        out.push_back({std::move(path), p.content});
    }
    return out;
}

}  // namespace callisto::gateway::interpreter
