#pragma once
// A fast check that bytes are one well-formed JSON value (RFC 8259, UTF-8 validated), without
// building anything. The relay splices the kernel's JSON parts into the frames it sends, so it
// must know they are valid; nlohmann's accept() does that at about 100 MB/s, which halved the
// throughput of a 50 MB output. This runs at memory speed over the long strings output is made of.

#include <cstddef>
#include <string_view>

namespace callisto::kernelproto {

// Deeper nesting than this is refused everywhere untrusted JSON is read. nlohmann's parser is
// iterative, but copying, dump() and comparing a value recurse once per level: 100,000 nested
// '[' (200 KB) overflowed the stack. Python's json module stops near 1,000 levels too, so no
// kernel or Jupyter client sends deeper documents.
inline constexpr std::size_t max_json_depth = 1000;

enum class json_check { valid, malformed, too_deep };

// \uXXXX escapes are checked for four hex digits only: lone surrogates are accepted, as
// Python's and JavaScript's parsers accept them. Nesting deeper than max_depth is too_deep.
json_check check_json(std::string_view text, std::size_t max_depth = max_json_depth);

inline bool is_valid_json(std::string_view text, std::size_t max_depth = max_json_depth) {
    return check_json(text, max_depth) == json_check::valid;
}

}  // namespace callisto::kernelproto
