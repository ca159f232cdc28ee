#pragma once
// IPython colours tracebacks with ANSI escape sequences; a model or a log reader wants the
// plain text.

#include <string>
#include <string_view>

namespace callisto::gateway::interpreter {

// Removes CSI sequences (ESC [ ... final byte), OSC sequences (ESC ] ... BEL or ESC \) and
// other two-byte ESC sequences. A truncated sequence at the end is dropped.
std::string strip_ansi(std::string_view text);

}  // namespace callisto::gateway::interpreter
