#pragma once
// multipart/form-data (RFC 7578) for POST /v1/contexts/{id}/files: a push parser that takes
// the body in pieces of any size (a boundary split across two pieces is found; memory held
// between pieces is bounded by a part's header limit and the delimiter length), and the rules
// that turn a parsed form into files to write. Pure, so every bad form is unit-tested.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace callisto::gateway::interpreter {

struct multipart_limits {
    std::size_t max_parts = 100;
    std::size_t max_header_bytes = 8 * 1024;  // one part's header block
    std::size_t max_field_bytes = 4 * 1024;   // a text field (not a file)
};

// The boundary of a "multipart/form-data; boundary=..." Content-Type (quoted or not), checked
// against RFC 2046 (1-70 characters of its set). nullopt and a sentence when refused.
std::optional<std::string> multipart_boundary(std::string_view content_type, std::string& error);

struct multipart_part_header {
    std::string name;                     // the form field name
    std::optional<std::string> filename;  // present for file parts (may be empty)
    std::string content_type;             // "" when the part does not say
};

class multipart_parser {
public:
    using part_fn = std::function<void(const multipart_part_header&)>;
    // The current part's bytes, in order, and where they begin in the body (the bytes fed).
    using data_fn = std::function<void(std::string_view data, std::size_t offset)>;
    using end_fn = std::function<void()>;  // the current part is complete

    multipart_parser(std::string boundary, multipart_limits limits, part_fn on_part,
                     data_fn on_data, end_fn on_part_end);

    // False once the body is malformed; error() says why and later calls do nothing.
    bool feed(std::string_view bytes);
    // The body is over: false unless the closing delimiter was seen.
    bool finish();
    // A body held whole, fed in pieces (the parser copies what it is fed: fed at once, it
    // would hold a second body), then finished; false as either would be.
    bool parse_whole(std::string_view body);
    const std::string& error() const { return error_; }
    std::size_t parts() const { return parts_; }

private:
    enum class state { preamble, after_delimiter, headers, body, done, failed };
    bool step();  // one transition on buffer_; false when it needs more bytes or failed
    bool fail(std::string why);
    bool parse_headers(std::string_view block);

    const std::string delimiter_;  // CRLF "--" boundary
    const multipart_limits limits_;
    part_fn on_part_;
    data_fn on_data_;
    end_fn on_part_end_;
    state state_ = state::preamble;
    std::string buffer_;   // the unconsumed end of what was fed (at first after a made-up CRLF)
    std::size_t fed_ = 0;  // bytes fed so far
    std::size_t parts_ = 0;
    std::string error_;
};

struct multipart_file {
    std::string path;          // where it goes in the workdir (checked)
    std::string_view content;  // its bytes: a view of the body given to parse_upload_form
};

// The whole form of an upload, parsed and checked: each file part goes to its filename, or,
// when the form has a single file part, to the value of a "path" text field. No other text
// fields; no file part with an empty filename; no path twice; no path that
// check_relative_path refuses; at least one file. nullopt and a sentence on any refusal, so a
// refused form writes nothing. Nothing of the body is copied: the parser is fed it in pieces
// (what it holds stays within a piece, a part's header limit and the delimiter) and each
// file's content is a view of it, so a form costs the gateway little more than its body,
// which --max-body-in-flight counts.
std::optional<std::vector<multipart_file>> parse_upload_form(std::string_view body,
                                                             std::string_view content_type,
                                                             const multipart_limits& limits,
                                                             std::string& error);

}  // namespace callisto::gateway::interpreter
